package appstoreserver

// Every endpoint against Tests/support/mock_app_store.py (a real HTTP server that verifies each request's bearer
// token with the public key, and its method, path, query and body against api_cases.json), through the generated
// methods, called by name with the case's parameters; the answer, written back from the Go model, must be the canned
// JSON (every page, for the paginated endpoints).

import (
	"bufio"
	"context"
	"crypto"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

type mockServer struct {
	url string
	p8  []byte
	cmd *exec.Cmd
}

func startMock(t *testing.T, extra ...string) *mockServer {
	t.Helper()
	p8, key := testP8(t)
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	pub := filepath.Join(t.TempDir(), "p256_public.pem")
	if err := os.WriteFile(pub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	support := filepath.Join(repoRoot, "Tests", "support")
	args := append([]string{filepath.Join(support, "mock_app_store.py"), "--cases", filepath.Join(support, "api_cases.json"),
		"--public-key", pub, "--key-id", testKeyID, "--issuer-id", testIssuer, "--bundle-id", testBundle}, extra...)
	cmd := exec.Command("python3", args...)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close() // the server stops when its stdin closes
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "PORT ") {
		t.Fatalf("mock_app_store.py said %q (%v)", line, err)
	}
	return &mockServer{url: "http://127.0.0.1:" + strings.Fields(line)[1], p8: p8, cmd: cmd}
}

type apiCase struct {
	Endpoint string           `json:"endpoint"`
	Params   map[string]any   `json:"params"`
	Response any              `json:"response"`
	Pages    []map[string]any `json:"pages"`
}

type endpointSpec struct {
	Name       string `json:"name"`
	Pagination *struct {
		Parameter string `json:"parameter"`
	} `json:"pagination"`
	Response   *string `json:"response"`
	Parameters []struct {
		Name string `json:"name"`
		In   string `json:"in"`
		Type any    `json:"type"`
	} `json:"parameters"`
}

func readJSON(t *testing.T, path string, v any) {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

// arguments converts a case's parameters into the Go method's arguments (after ctx), by the spec's parameter order.
func arguments(t *testing.T, m reflect.Type, ep endpointSpec, params map[string]any, skip string) []reflect.Value {
	named := map[string]bool{"body": true}
	for _, p := range ep.Parameters {
		named[p.Name] = true
	}
	var args []reflect.Value
	i := 1 // after ctx
	for _, p := range ep.Parameters {
		if p.Name == skip {
			continue
		}
		var v any
		switch {
		case p.In == "body" && p.Type != "Bytes":
			v = params["body"]
		case p.In == "query" && isModelQuery(p.Type):
			fields := map[string]any{}
			for k, x := range params {
				if !named[k] {
					fields[k] = x
				}
			}
			v = fields
		default:
			v = params[p.Name]
		}
		arg := reflect.New(m.In(i))
		b, _ := json.Marshal(v)
		if err := json.Unmarshal(b, arg.Interface()); err != nil {
			t.Fatalf("%s: parameter %s: %v", ep.Name, p.Name, err)
		}
		args = append(args, arg.Elem())
		i++
	}
	return args
}

func isModelQuery(t any) bool {
	s, ok := t.(string)
	return ok && strings.HasSuffix(s, "Request")
}

func asJSON(t *testing.T, v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	json.Unmarshal(b, &out)
	return out
}

func TestEveryEndpointAgainstTheMock(t *testing.T) {
	mock := startMock(t)
	var cases struct {
		Cases []apiCase `json:"cases"`
	}
	readJSON(t, filepath.Join(repoRoot, "Tests", "support", "api_cases.json"), &cases)
	var spec struct {
		Endpoints []endpointSpec `json:"endpoints"`
	}
	readJSON(t, filepath.Join(repoRoot, "spec", "endpoints.json"), &spec)
	byName := map[string]endpointSpec{}
	for _, ep := range spec.Endpoints {
		byName[ep.Name] = ep
	}
	key, err := NewSigningKey(mock.p8, testKeyID, testIssuer, testBundle)
	if err != nil {
		t.Fatal(err)
	}
	defer key.Close()
	c, err := NewAppStoreServerAPIClientWithKey(key, EnvironmentSandbox, &ClientOptions{BaseURL: mock.url})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tl := &tally{name: "endpoints"}
	defer tl.print()
	if len(cases.Cases) != len(spec.Endpoints) {
		t.Errorf("%d cases for %d endpoints", len(cases.Cases), len(spec.Endpoints))
	}
	cv := reflect.ValueOf(c)
	for _, ac := range cases.Cases {
		ac := ac
		ok := t.Run(ac.Endpoint, func(t *testing.T) {
			ep := byName[ac.Endpoint]
			name := exportedName(ac.Endpoint)
			ctx := reflect.ValueOf(context.Background())
			if ep.Pagination != nil {
				m := cv.MethodByName(name + "Pages")
				if !m.IsValid() {
					t.Fatalf("no method %sPages", name)
				}
				args := arguments(t, m.Type(), ep, ac.Params, ep.Pagination.Parameter)
				var pages []any
				yield := reflect.MakeFunc(m.Type().In(m.Type().NumIn()-1), func(in []reflect.Value) []reflect.Value {
					pages = append(pages, asJSON(t, in[0].Interface()))
					return []reflect.Value{reflect.ValueOf(true)}
				})
				out := m.Call(append(append([]reflect.Value{ctx}, args...), yield))
				if err, _ := out[0].Interface().(error); err != nil {
					t.Fatal(err)
				}
				if want := asJSON(t, ac.Pages); !reflect.DeepEqual(asJSON(t, pages), want) {
					t.Fatalf("pages %v, want %v", pages, want)
				}
				return
			}
			m := cv.MethodByName(name)
			if !m.IsValid() {
				t.Fatalf("no method %s", name)
			}
			out := m.Call(append([]reflect.Value{ctx}, arguments(t, m.Type(), ep, ac.Params, "")...))
			if err, _ := out[len(out)-1].Interface().(error); err != nil {
				t.Fatal(err)
			}
			if ep.Response == nil {
				if len(out) != 1 {
					t.Fatalf("a method without an answer returns %d values", len(out))
				}
				return
			}
			if got, want := asJSON(t, out[0].Interface()), asJSON(t, ac.Response); !reflect.DeepEqual(got, want) {
				t.Fatalf("answer %v, want %v", got, want)
			}
		})
		tl.add(ok)
	}
}

// mockSigner is the mock's key as a crypto.Signer (what a KMS client gives).
func mockSigner(t *testing.T, mock *mockServer) crypto.Signer {
	block, _ := pem.Decode(mock.p8)
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return k.(crypto.Signer)
}

// exportedName is the Go method name of an endpoint (the generator's rule, written again here).
func exportedName(endpoint string) string {
	s := strings.ToUpper(endpoint[:1]) + endpoint[1:]
	for _, pair := range [][2]string{{"Id", "ID"}, {"Url", "URL"}} {
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			if strings.HasPrefix(s[i:], pair[0]) && (i+len(pair[0]) == len(s) || s[i+len(pair[0])] >= 'A' && s[i+len(pair[0])] <= 'Z') {
				b.WriteString(pair[1])
				i += len(pair[0]) - 1
				continue
			}
			b.WriteByte(s[i])
		}
		s = b.String()
	}
	return s
}

func TestAPIErrorFromTheMock(t *testing.T) {
	mock := startMock(t)
	c, err := NewAppStoreServerAPIClient(mock.p8, testKeyID, testIssuer, testBundle, EnvironmentSandbox)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Apple's base URL is replaced through the options-taking constructor; this one checks the Apple-style
	// constructor refuses nothing and the client closes cleanly. The error paths use a client on the mock:
	c.Close()
	key, _ := NewSigningKey(mock.p8, testKeyID, testIssuer, testBundle)
	defer key.Close()
	c2, err := NewAppStoreServerAPIClientWithKey(key, EnvironmentSandbox, &ClientOptions{BaseURL: mock.url})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	_, err = c2.GetTransactionInfo(context.Background(), "error-404-4040010")
	var ae *APIError
	if !errors.As(err, &ae) {
		t.Fatalf("not an *APIError: %v", err)
	}
	if ae.HTTPStatusCode != 404 || ae.APIError() != APIErrorCodeTransactionIDNotFound || ae.Status != VerificationStatusApiError {
		t.Fatalf("got %+v", ae)
	}
	_, err = c2.GetTransactionInfo(context.Background(), "ratelimit")
	if !errors.As(err, &ae) || ae.HTTPStatusCode != 429 || ae.RetryAfter != 7 || !ae.Retryable() || ae.Header.Get("Retry-After") != "7" {
		t.Fatalf("ratelimit: %+v", err)
	}
	_, err = c2.GetTransactionInfo(context.Background(), "malformed")
	if !errors.As(err, &ae) || ae.Status != VerificationStatusInvalidResponse {
		t.Fatalf("malformed: %v", err)
	}
	// A closed client refuses calls.
	c2.Close()
	if _, err := c2.GetTransactionInfo(context.Background(), "1"); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
	// An external signer's key closed while a client made with it lives: the client still signs its tokens (the mock
	// verifies them with the public key).
	signerKey, err := NewSigningKeyWithSigner(mockSigner(t, mock), testKeyID, testIssuer, testBundle, 0)
	if err != nil {
		t.Fatal(err)
	}
	c4, err := NewAppStoreServerAPIClientWithKey(signerKey, EnvironmentSandbox, &ClientOptions{BaseURL: mock.url})
	if err != nil {
		t.Fatal(err)
	}
	signerKey.Close()
	if _, err := c4.GetTransactionInfo(context.Background(), "2000000000000001"); err != nil {
		t.Fatalf("a client whose external signer's key was closed: %v", err)
	}
	c4.Close()
	// A cancelled context ends a call before anything is sent.
	c3, _ := NewAppStoreServerAPIClientWithKey(key, EnvironmentSandbox, &ClientOptions{BaseURL: mock.url})
	defer c3.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c3.GetTransactionInfo(ctx, "1"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}
