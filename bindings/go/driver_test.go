package appstoreserver

// The call driver's shared scenarios (Tests/driver/scenarios.json, read its "doc") through the Go client's own loop:
// each SEND reaches the client's http.Client (a scripted RoundTripper checking the method and full URL), each WAIT
// the client's sleep, the clock is the client's now serving each step's `now`, and the call ends with the
// scenario's answer or its error. driverOnly scenarios misuse the driver, which a client loop never does.

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

const (
	testKeyID  = "ABC123DEFG"
	testIssuer = "57246542-96fe-1a63-e053-0824d011072a"
	testBundle = "com.example"
)

// testP8 is a fresh P-256 key as a .p8 (PKCS #8 PEM), and the key.
func testP8(t testing.TB) ([]byte, *ecdsa.PrivateKey) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), k
}

type scenario struct {
	Name       string           `json:"name"`
	Client     map[string]any   `json:"client"`
	Endpoint   string           `json:"endpoint"`
	Params     map[string]any   `json:"params"`
	Steps      []map[string]any `json:"steps"`
	Pages      bool             `json:"pages"`
	DriverOnly bool             `json:"driverOnly"`
}

type script struct {
	t        *testing.T
	s        scenario
	i        int
	answered map[string]any
	failed   error // the transport failure the RoundTripper returned
}

func (sc *script) fatalf(format string, args ...any) {
	sc.t.Helper()
	sc.t.Fatalf(sc.s.Name+": "+format, args...)
}

func (sc *script) wentOn() {
	if sc.answered != nil {
		if more, _ := sc.answered["hasNextPage"].(bool); !more {
			sc.fatalf("the loop went on after the last page")
		}
		sc.answered = nil
	}
}

func (sc *script) take(kind string) map[string]any {
	sc.wentOn()
	if sc.i >= len(sc.s.Steps) {
		sc.fatalf("the loop went on after the last step (%s)", kind)
	}
	step := sc.s.Steps[sc.i]
	if _, ok := step[kind]; !ok {
		sc.fatalf("step %d is %v, the loop did %s", sc.i, step, kind)
	}
	sc.i++
	return step
}

func (sc *script) now() int64 {
	sc.wentOn()
	if sc.i >= len(sc.s.Steps) {
		sc.fatalf("the loop asked the clock after the last step")
	}
	step := sc.s.Steps[sc.i]
	n, ok := step["now"].(float64)
	if !ok {
		sc.fatalf("step %d gives no time, the loop asked for it", sc.i)
	}
	if _, ok := step["receive"]; ok {
		sc.i++
	}
	return int64(n)
}

func (sc *script) sleep(_ context.Context, d time.Duration) error {
	want := sc.take("wait")["wait"].(float64)
	if d != time.Duration(want)*time.Millisecond {
		sc.fatalf("slept %v, the driver says wait %v ms", d, want)
	}
	return nil
}

type timeoutError struct{ msg string }

func (e timeoutError) Error() string   { return e.msg }
func (e timeoutError) Timeout() bool   { return true }
func (e timeoutError) Temporary() bool { return true }

func (sc *script) RoundTrip(req *http.Request) (*http.Response, error) {
	want := sc.take("send")["send"].(map[string]any)
	if req.Method != want["method"] || req.URL.String() != want["url"] {
		sc.fatalf("sent %s %s, want %s %s", req.Method, req.URL, want["method"], want["url"])
	}
	if !strings.HasPrefix(req.Header.Get("Authorization"), "Bearer ") {
		sc.fatalf("no bearer token")
	}
	if ms, ok := want["timeoutMs"].(float64); ok {
		// The exchange's context ends the request's timeout (the time left) after it was made, on the real clock: at
		// most that far away (a timeout that was not cut to the time left would be further).
		dl, has := req.Context().Deadline()
		if left := time.Until(dl); !has || left <= 0 || left > time.Duration(ms)*time.Millisecond {
			sc.fatalf("the exchange's deadline is %v away, want at most %v ms", left, ms)
		}
	}
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
	}
	if wantBody, ok := sc.s.Params["body"]; ok {
		var got any
		if json.Unmarshal(body, &got) != nil || !reflect.DeepEqual(got, wantBody) {
			sc.fatalf("body %s, want %v", body, wantBody)
		}
	} else if len(body) != 0 {
		sc.fatalf("unexpected body %s", body)
	}
	if sc.i >= len(sc.s.Steps) {
		sc.fatalf("no outcome scripted for the send")
	}
	step := sc.s.Steps[sc.i]
	if f, ok := step["fail"].(map[string]any); ok {
		sc.i++
		msg := f["message"].(string)
		switch f["result"] {
		case "TIMEOUT":
			sc.failed = timeoutError{msg}
		case "UNREACHABLE":
			sc.failed = &net.OpError{Op: "dial", Net: "tcp", Err: errors.New(msg)}
		default:
			sc.failed = errors.New(msg)
		}
		return nil, sc.failed
	}
	r, ok := step["receive"].(map[string]any)
	if !ok {
		sc.fatalf("step %d is %v after a send", sc.i, step)
	}
	var content []byte
	if text, ok := r["bodyText"].(string); ok {
		content = []byte(text)
	} else {
		content, _ = json.Marshal(r["body"])
	}
	h := http.Header{}
	if hs, ok := r["headers"].(map[string]any); ok {
		for k, v := range hs {
			h.Add(k, v.(string))
		}
	}
	return &http.Response{StatusCode: int(r["status"].(float64)), Header: h, Body: io.NopCloser(bytes.NewReader(content)),
		Request: req}, nil
}

var envNames = map[string]Environment{"PRODUCTION": EnvironmentProduction, "SANDBOX": EnvironmentSandbox}

func runScenario(t *testing.T, p8 []byte, s scenario) {
	sc := &script{t: t, s: s}
	o := &ClientOptions{HTTPClient: &http.Client{Transport: sc}}
	if ms, ok := s.Client["timeoutMs"].(float64); ok {
		o.Timeout = time.Duration(ms) * time.Millisecond
	}
	if r, ok := s.Client["maxRetries"].(float64); ok {
		o.MaxRetries = int(r)
		o.InitialBackoff = time.Duration(s.Client["initialBackoffMs"].(float64)) * time.Millisecond
		o.MaxBackoff = time.Duration(s.Client["maxBackoffMs"].(float64)) * time.Millisecond
	}
	o.SandboxFallback, _ = s.Client["sandboxFallback"].(bool)
	if rl, ok := s.Client["rateLimit"].(map[string]any); ok {
		o.RateLimit = true
		o.RateLimitMaxWait = time.Duration(rl["maxWaitMs"].(float64)) * time.Millisecond
		o.RateLimitSharePercent = int(rl["sharePercent"].(float64))
	}
	key, err := NewSigningKey(p8, testKeyID, testIssuer, testBundle)
	if err != nil {
		t.Fatal(err)
	}
	defer key.Close()
	c, err := NewAppStoreServerAPIClientWithKey(key, envNames[s.Client["environment"].(string)], o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.now = sc.now
	c.sleep = sc.sleep
	err = c.run(context.Background(), s.Endpoint, s.Params, func(raw []byte, env Environment) (bool, error) {
		want := sc.take("done")["done"].(map[string]any)
		var got any
		if json.Unmarshal(raw, &got) != nil || !reflect.DeepEqual(got, want["json"]) {
			sc.fatalf("answer %s, want %v", raw, want["json"])
		}
		if env != envNames[want["environment"].(string)] {
			sc.fatalf("answered by %s, want %s", env, want["environment"])
		}
		sc.answered = want
		return true, nil
	})
	if err == nil {
		if sc.answered == nil || sc.answered["hasNextPage"].(bool) {
			sc.fatalf("stopped early")
		}
		sc.answered = nil
	} else {
		want := sc.take("error")["error"].(map[string]any)
		var ae *APIError
		if !errors.As(err, &ae) {
			sc.fatalf("not an *APIError: %T %v", err, err)
		}
		got := map[string]any{"status": ae.Status.String(), "reason": ae.Reason.String(),
			"httpStatus": float64(ae.HTTPStatusCode), "apiErrorCode": float64(ae.RawAPIError)}
		if !ae.RetryAt.IsZero() {
			got["retryAfterMs"] = float64(ae.RetryAt.UnixMilli())
		} else {
			got["retryAfterMs"] = nil
		}
		for k := range got {
			if w, listed := want[k]; listed && !reflect.DeepEqual(w, got[k]) {
				sc.fatalf("%s = %v, want %v (%s)", k, got[k], w, ae.Message)
			}
		}
		for _, text := range asStrings(want["messageContains"]) {
			if !strings.Contains(ae.Message, text) {
				sc.fatalf("%q not in %q", text, ae.Message)
			}
		}
		for _, text := range asStrings(want["messageLacks"]) {
			if strings.Contains(ae.Message, text) {
				sc.fatalf("%q in %q", text, ae.Message)
			}
		}
		if sc.failed != nil && ae.Status != VerificationStatusTransportError {
			sc.fatalf("a transport failure ended as %s", ae.Status)
		}
	}
	if sc.i != len(s.Steps) {
		sc.fatalf("ended at step %d of %d", sc.i, len(s.Steps))
	}
}

func asStrings(v any) []string {
	var out []string
	for _, x := range asList(v) {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func TestDriverScenarios(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "Tests", "driver", "scenarios.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Scenarios []scenario `json:"scenarios"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	p8, _ := testP8(t)
	tl := &tally{name: "driver scenarios"}
	defer tl.print()
	run := 0
	for _, s := range doc.Scenarios {
		if s.DriverOnly {
			continue
		}
		run++
		s := s
		ok := t.Run(s.Name, func(t *testing.T) { runScenario(t, p8, s) })
		tl.add(ok)
	}
	if run < 21 {
		t.Errorf("%d scenarios run, want at least 21", run)
	}
}
