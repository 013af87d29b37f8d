package appstoreserver

// The manifest runner shared by the conformance (real Apple data, ../shared/conformance) and testpki (own PKI,
// Tests/support/testpki.py) tests; the same checks as Tests/capi/conformance.c and the Java / Python runners.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
)

var repoRoot = func() string {
	wd, _ := os.Getwd()
	return filepath.Clean(filepath.Join(wd, "..", ".."))
}()

func conformanceDir() string {
	if d := os.Getenv("APPSTORESERVER_CONFORMANCE"); d != "" {
		return d
	}
	return filepath.Join(repoRoot, "..", "shared", "conformance")
}

var (
	testpkiOnce sync.Once
	testpkiPath string
	testpkiErr  error
)

// testpkiDir is a fresh own PKI (APPSTORESERVER_TESTPKI: one made already).
func testpkiDir(t *testing.T) string {
	testpkiOnce.Do(func() {
		if d := os.Getenv("APPSTORESERVER_TESTPKI"); d != "" {
			testpkiPath = d
			return
		}
		dir, err := os.MkdirTemp("", "go-testpki-")
		if err != nil {
			testpkiErr = err
			return
		}
		out, err := exec.Command("python3", filepath.Join(repoRoot, "Tests", "support", "testpki.py"), dir).CombinedOutput()
		if err != nil {
			testpkiErr = fmt.Errorf("testpki.py: %v: %s", err, out)
		}
		testpkiPath = dir
	})
	if testpkiErr != nil {
		t.Fatal(testpkiErr)
	}
	return testpkiPath
}

// tally prints "go NAME: N passed, M failed, K skipped" when the test ends (run-tests collects these lines).
type tally struct {
	name                    string
	mu                      sync.Mutex
	passed, failed, skipped int
}

func (t *tally) add(ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if ok {
		t.passed++
	} else {
		t.failed++
	}
}

func (t *tally) print() {
	fmt.Printf("go %s: %d passed, %d failed, %d skipped\n", t.name, t.passed, t.failed, t.skipped)
}

type manifest struct {
	Cases []map[string]any `json:"cases"`
}

func readManifest(t *testing.T, dir string) manifest {
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func readText(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// errorClasses: the shared manifest's error classes and the reasons that satisfy them (Tests/capi/conformance.c).
var errorClasses = map[string][]string{
	"signature_invalid": {"bad_signature"}, "unsupported_alg": {"unsupported_alg"}, "missing_x5c": {"missing_x5c"},
	"chain_length": {"chain_length", "empty_x5c"}, "invalid_certificate": {"bad_certificate"},
	"chain_untrusted": {"untrusted_chain"}, "chain_invalid": {"untrusted_chain", "expired", "missing_marker_oid", "chain_length"},
	"expired": {"expired"}, "no_trust_anchor": {"no_trust_anchor"}, "wrong_bundle": {"wrong_bundle"},
	"wrong_app_apple_id": {"wrong_app_id"}, "wrong_environment": {"wrong_environment"}, "wrong_kind": {"wrong_kind"},
	"malformed_jws": {"malformed"},
}

var operationOf = map[string]Operation{
	"verifyAndDecodeNotification": OperationNotification, "verifyAndDecodeTransaction": OperationTransaction,
	"verifyAndDecodeRenewalInfo": OperationRenewalInfo, "verifyAndDecodeAppTransaction": OperationAppTransaction,
	"verifyAndDecodeRealtimeRequest": OperationRealtimeRequest,
}

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

func obj(m map[string]any, k string) map[string]any {
	o, _ := m[k].(map[string]any)
	return o
}

// callTyped runs the operation's typed method and returns the model written back as JSON.
func callTyped(v *SignedDataVerifier, op string, jws string) (map[string]any, error) {
	ctx := context.Background()
	var model any
	var err error
	switch op {
	case "verifyAndDecodeNotification":
		model, err = v.VerifyAndDecodeNotification(ctx, jws)
	case "verifyAndDecodeTransaction":
		model, err = v.VerifyAndDecodeTransaction(ctx, jws)
	case "verifyAndDecodeRenewalInfo":
		model, err = v.VerifyAndDecodeRenewalInfo(ctx, jws)
	case "verifyAndDecodeAppTransaction":
		model, err = v.VerifyAndDecodeAppTransaction(ctx, jws)
	default:
		model, err = v.VerifyAndDecodeRealtimeRequest(ctx, jws)
	}
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(model)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	return out, json.Unmarshal(b, &out)
}

func truncated(x float64) float64 {
	if x < 0 {
		return math.Ceil(x)
	}
	return math.Floor(x)
}

func sameScalar(want, got any) bool {
	w, wok := want.(float64)
	g, gok := got.(float64)
	if wok && gok {
		return truncated(w) == truncated(g)
	}
	return reflect.DeepEqual(want, got)
}

var uuidRE = regexp.MustCompile(`(?i)^[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}$`)

// checkCase checks one verify case; an error describes the first mismatch.
func checkCase(base string, c map[string]any) error {
	op := str(c, "operation")
	expect := obj(c, "expect")
	result := str(expect, "result")
	jws := ""
	if b, err := os.ReadFile(filepath.Join(base, str(c, "path"))); err == nil {
		jws = strings.TrimSpace(string(b))
	} else {
		return err
	}
	vc := obj(c, "verifier")
	var roots [][]byte
	for _, r := range vc["rootCertificates"].([]any) {
		b, err := os.ReadFile(filepath.Join(base, r.(string)))
		if err != nil {
			return err
		}
		roots = append(roots, b)
	}
	var appID int64
	if f, ok := vc["appAppleId"].(float64); ok {
		appID = int64(f)
	}
	online, _ := vc["enableOnlineChecks"].(bool)
	v, err := NewSignedDataVerifier(roots, online, Environment(str(vc, "environment")), str(vc, "bundleId"), appID)
	if err != nil {
		// A verifier the library refuses: the case must expect that refusal.
		var e *Error
		if !errors.As(err, &e) {
			return fmt.Errorf("constructor: not *Error: %v", err)
		}
		reason := e.Reason.String()
		switch {
		case result == "config_error":
			if want := str(expect, "reason"); want != reason {
				return fmt.Errorf("config error reason %s, want %s (%s)", reason, want, e.Message)
			}
			return nil
		case strings.HasPrefix(result, "error") && strings.HasPrefix(str(expect, "error_class"), "no_trust_anchor") && reason == "no_trust_anchor":
			return nil
		}
		return fmt.Errorf("verifier refused: %v (expected %v)", err, expect)
	}
	defer v.Close()
	raw, rawErr := v.VerifyAndDecodeJSON(context.Background(), operationOf[op], jws)
	written, typedErr := callTyped(v, op, jws)
	if (rawErr == nil) != (typedErr == nil) {
		return fmt.Errorf("the JSON call and the typed call disagree: %v / %v", rawErr, typedErr)
	}
	if result == "implementation-defined" {
		var ve *VerificationError
		if rawErr != nil && !errors.As(rawErr, &ve) {
			return fmt.Errorf("implementation-defined: not a VerificationError: %v", rawErr)
		}
		return nil
	}
	if result == "config_error" {
		// Online checks are available in Go (net/http): the case's leaf names no OCSP responder.
		var ve *VerificationError
		if str(expect, "reason") != "online_checks_unavailable" || !errors.As(rawErr, &ve) || ve.Reason != ReasonOcspNoResponder {
			return fmt.Errorf("config case %v: got %v", expect, rawErr)
		}
		return nil
	}
	if result == "valid" {
		if rawErr != nil {
			return fmt.Errorf("expected valid, got %v", rawErr)
		}
		parts := strings.Split(jws, ".")
		payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
		if err != nil {
			return err
		}
		var gotJSON, wantJSON map[string]any
		if json.Unmarshal(raw, &gotJSON) != nil || json.Unmarshal(payload, &wantJSON) != nil {
			return fmt.Errorf("not JSON")
		}
		if !reflect.DeepEqual(gotJSON, wantJSON) {
			return fmt.Errorf("the JSON is not the signed payload")
		}
		fields := obj(expect, "fields")
		if fields == nil {
			fields = obj(c, "fields")
		}
		for k, want := range fields {
			got, present := gotJSON[k]
			w, wpresent := written[k]
			if want == nil {
				if (present && got != nil) || (wpresent && w != nil) {
					return fmt.Errorf("field %s: expected null, got %v / model %v", k, got, w)
				}
				continue
			}
			switch want.(type) {
			case map[string]any, []any:
				continue
			}
			if !present || !sameScalar(want, got) {
				return fmt.Errorf("field %s: %v, want %v", k, got, want)
			}
			if !wpresent || !sameScalar(want, w) {
				if s, ok := want.(string); !(ok && uuidRE.MatchString(s) && strings.EqualFold(s, fmt.Sprint(w))) {
					return fmt.Errorf("model field %s: %v, want %v", k, w, want)
				}
			}
		}
		return nil
	}
	if !strings.HasPrefix(result, "error") {
		return fmt.Errorf("unknown expectation %s", result)
	}
	if rawErr == nil {
		return fmt.Errorf("expected an error, got a valid result")
	}
	var ve *VerificationError
	if !errors.As(rawErr, &ve) {
		return fmt.Errorf("not a *VerificationError: %T %v", rawErr, rawErr)
	}
	if ve.Message == "" {
		return fmt.Errorf("empty message")
	}
	want := fmt.Sprintf("Verification failed with status %s (%s): %s", ve.Status, ve.Reason, ve.Message)
	if rawErr.Error() != want {
		return fmt.Errorf("message form %q", rawErr.Error())
	}
	reason, status := ve.Reason.String(), ve.Status.String()
	if r := str(expect, "reason"); r != "" && r != reason {
		return fmt.Errorf("reason %s, want %s (%s)", reason, r, ve.Message)
	}
	if s := str(expect, "status"); s != "" && s != status {
		return fmt.Errorf("status %s, want %s (%s)", status, s, ve.Message)
	}
	if s := str(expect, "apple_status"); s != "" && s != status {
		return fmt.Errorf("Apple's (Swift) status %s, want %s", status, s)
	}
	if ec := str(expect, "error_class"); ec != "" {
		ok := false
		for _, alt := range strings.Split(ec, "/") {
			head := strings.Fields(strings.TrimSpace(alt))[0]
			accepted, known := errorClasses[head]
			if !known {
				return fmt.Errorf("unmapped error class %s", alt)
			}
			for _, a := range accepted {
				ok = ok || a == reason
			}
		}
		if !ok {
			return fmt.Errorf("expected %s, got %s/%s: %s", ec, status, reason, ve.Message)
		}
	}
	if ve.Reason == ReasonWrongKind || ve.Reason == ReasonWrongBundle {
		var target *VerificationError
		if !errors.As(fmt.Errorf("wrapped: %w", rawErr), &target) {
			return fmt.Errorf("errors.As through a wrap failed")
		}
	}
	return nil
}

// checkReceipt is one receipt extraction case (Tests/capi/receipts_conformance.c): value / error-or-null / null.
func checkReceipt(base string, c map[string]any) error {
	text, err := os.ReadFile(filepath.Join(base, str(c, "path")))
	if err != nil {
		return err
	}
	receipt := strings.TrimSpace(string(text))
	expect := obj(c, "expect")
	result := str(expect, "result")
	var got string
	if str(c, "operation") == "extractTransactionIdFromAppReceipt" {
		got, err = ExtractTransactionIDFromAppReceipt(receipt)
	} else {
		got, err = ExtractTransactionIDFromTransactionReceipt(receipt)
	}
	if err != nil {
		var e *Error
		if !errors.As(err, &e) || e.Status != VerificationStatusInvalidReceipt {
			return fmt.Errorf("not an INVALID_RECEIPT *Error: %v", err)
		}
	}
	switch {
	case result == "value":
		if err != nil {
			return fmt.Errorf("expected a value, got %v", err)
		}
		if v, ok := expect["value"].(string); ok {
			if got != v {
				return fmt.Errorf("got %q, want %q", got, v)
			}
			return nil
		}
		want := expect["python_java_node"]
		if want == nil {
			if got != "" {
				return fmt.Errorf("got %q, want none", got)
			}
			return nil
		}
		if got != want.(string) {
			return fmt.Errorf("got %q, want Apple's Python/Java/Node %q", got, want)
		}
		for _, a := range expect["any_of"].([]any) {
			if a == got {
				return nil
			}
		}
		return fmt.Errorf("%q is not one of any_of", got)
	case result == "error-or-null":
		if err == nil && got != "" {
			return fmt.Errorf("expected an error or none, got %q", got)
		}
	case strings.HasPrefix(result, "null"):
		if err != nil || got != "" {
			return fmt.Errorf("expected none, got %q / %v", got, err)
		}
	default:
		return fmt.Errorf("unknown expectation %s", result)
	}
	return nil
}
