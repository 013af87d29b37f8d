package appstoreserver

// Online (OCSP) checks through the Go transport (net/http behind the library's transport callback) against the real
// `openssl ocsp` responders of Tests/support/ocsp_harness.py: every case's status, reason and message, the requests
// the responders received, the cache, and a context that ends a slow exchange.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type ocspSetup struct {
	Root       string `json:"root"`
	BundleID   string `json:"bundleId"`
	ControlURL string `json:"controlUrl"`
	Cases      map[string]struct {
		JWS    []string       `json:"jws"`
		Expect map[string]any `json:"expect"`
	} `json:"cases"`
}

func startOCSP(t *testing.T) *ocspSetup {
	for _, tool := range []string{"openssl", "faketime"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("SKIPPED: the openssl and faketime commands run the OCSP responders (%s missing)", tool)
		}
	}
	cmd := exec.Command("python3", filepath.Join(repoRoot, "Tests", "support", "ocsp_harness.py"), "serve", t.TempDir(),
		"--lifetime", "300")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "READY ") {
		t.Fatalf("ocsp_harness.py said %q (%v)", line, err)
	}
	var s ocspSetup
	readJSON(t, strings.TrimSpace(strings.TrimPrefix(line, "READY ")), &s)
	return &s
}

func (s *ocspSetup) total(t *testing.T) int {
	resp, err := http.Get(s.ControlURL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var c struct {
		Total int `json:"total"`
	}
	json.NewDecoder(resp.Body).Decode(&c)
	return c.Total
}

func (s *ocspSetup) verifier(t *testing.T, online bool, o VerifierOptions) *SignedDataVerifier {
	root, err := os.ReadFile(s.Root)
	if err != nil {
		t.Fatal(err)
	}
	o.RootCertificates, o.EnableOnlineChecks, o.Environment, o.BundleID = [][]byte{root}, online, EnvironmentSandbox, s.BundleID
	v, err := NewSignedDataVerifierWithOptions(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	return v
}

func (s *ocspSetup) jws(t *testing.T, name string, i int) string {
	return readText(t, s.Cases[name].JWS[i])
}

func outcomeOf(err error) map[string]any {
	if err == nil {
		return map[string]any{"status": "OK"}
	}
	var ve *VerificationError
	if !errors.As(err, &ve) {
		return map[string]any{"status": "not a VerificationError: " + err.Error()}
	}
	return map[string]any{"status": ve.Status.String(), "reason": ve.Reason.String(), "message": ve.Message}
}

func TestOnlineChecks(t *testing.T) {
	s := startOCSP(t)
	ctx := context.Background()
	tl := &tally{name: "ocsp"}
	defer tl.print()
	for name, c := range s.Cases {
		slow := name == "responder_slow"
		timeout := 10 * time.Second
		if slow {
			timeout = 2500 * time.Millisecond
		}
		v := s.verifier(t, true, VerifierOptions{OCSPTimeout: timeout})
		before := s.total(t)
		_, err := v.VerifyAndDecodeTransaction(ctx, s.jws(t, name, 0))
		got := outcomeOf(err)
		received := s.total(t) - before
		var problems []string
		if got["status"] != c.Expect["status"] || (c.Expect["reason"] != nil && got["reason"] != c.Expect["reason"]) {
			problems = append(problems, "got "+jsonText(got))
		}
		for _, piece := range asStrings(c.Expect["messageContains"]) {
			if !strings.Contains(got["message"].(string), piece) {
				problems = append(problems, "message lacks "+piece)
			}
		}
		if float64(received) != c.Expect["responderRequests"].(float64) {
			problems = append(problems, "responder requests "+jsonText(received))
		}
		off := outcomeOf(func() error {
			_, err := s.verifier(t, false, VerifierOptions{}).VerifyAndDecodeTransaction(ctx, s.jws(t, name, 0))
			return err
		}())
		for k, w := range c.Expect["offline"].(map[string]any) {
			if off[k] != w {
				problems = append(problems, "offline "+jsonText(off))
			}
		}
		tl.add(len(problems) == 0)
		if len(problems) > 0 {
			t.Errorf("%s: expected %s: %v", name, jsonText(c.Expect), problems)
		}
	}

	// The cache: the chain's two certificates are checked once.
	v := s.verifier(t, true, VerifierOptions{})
	before := s.total(t)
	for i := range s.Cases["good"].JWS {
		if _, err := v.VerifyAndDecodeTransaction(ctx, s.jws(t, "good", i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.total(t) - before; n != 2 {
		t.Errorf("%d OCSP requests for %d verifications of one chain, want 2", n, len(s.Cases["good"].JWS))
	}

	// The caller's context reaches the exchange: a cancelled deadline ends the slow responder's wait early.
	// (The relay waits 6 s; 300 ms is far below it, and the check allows 4 s for a loaded machine.)
	slow := s.verifier(t, true, VerifierOptions{OCSPTimeout: 20 * time.Second, ChainCacheEntries: new(uint32)})
	dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := slow.VerifyAndDecodeTransaction(dctx, s.jws(t, "responder_slow", 0))
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 4*time.Second {
		t.Errorf("a 300 ms context on the slow responder: %v after %v", err, time.Since(start))
	}
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
