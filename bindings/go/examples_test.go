package appstoreserver

// examples/go run as a user runs them (built in their own module, with a replace directive), against the own PKI,
// the mock App Store server and Apple's real data when ../shared is present; and every Go snippet of docs/go.md
// builds as written.

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// buildModule builds the packages of a module folder into dir (go build -o dir/ ./...).
func buildModule(t *testing.T, module, out string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-o", out+string(filepath.Separator), "./...")
	cmd.Dir = module
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build in %s: %v\n%s", module, err, b)
	}
}

func runExample(t *testing.T, bin string, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), code
}

func TestExamples(t *testing.T) {
	bin := t.TempDir()
	buildModule(t, filepath.Join(repoRoot, "examples", "go"), bin)
	pki := testpkiDir(t)
	verify := filepath.Join(bin, "verify-notification")

	out, errOut, code := runExample(t, verify, nil, "-root", filepath.Join(pki, "root.der"),
		filepath.Join(pki, "jws", "notif-valid-did-renew.jws"), "com.example.testpki")
	if code != 0 || !strings.HasPrefix(out, "type: DID_RENEW") || !strings.Contains(out, "transaction: ") {
		t.Fatalf("verify-notification: %d %q %q", code, out, errOut)
	}
	out, errOut, code = runExample(t, verify, nil, "-root", filepath.Join(pki, "root.der"),
		filepath.Join(pki, "jws", "notif-untrusted-forged-chain.jws"), "com.example.testpki")
	if code != 1 || !strings.Contains(errOut, "NOT VERIFIED") || !strings.Contains(errOut, "untrusted_chain") {
		t.Fatalf("verify-notification of a forged chain: %d %q %q", code, out, errOut)
	}
	// Apple's real data with the root that comes with the library.
	if b, err := os.ReadFile(filepath.Join(conformanceDir(), "manifest.json")); err == nil {
		var m struct {
			Files []map[string]any `json:"files"`
		}
		json.Unmarshal(b, &m)
		for _, f := range m.Files {
			if f["kind"] == "notification" && f["signedDate"] != nil && f["environment"] == "Sandbox" {
				out, errOut, code = runExample(t, verify, nil, filepath.Join(conformanceDir(), f["path"].(string)),
					f["bundleId"].(string))
				if code != 0 || !strings.HasPrefix(out, "type: ") {
					t.Fatalf("verify-notification of Apple's %s: %d %q %q", f["path"], code, out, errOut)
				}
				break
			}
		}
	} else {
		t.Log("SKIPPED: Apple's real data (../shared/conformance) not found")
	}

	mock := startMock(t)
	out, errOut, code = runExample(t, filepath.Join(bin, "refund-history"), []string{"APPSTORE_PRIVATE_KEY=" + string(mock.p8)},
		"-key-id", testKeyID, "-issuer-id", testIssuer, "-bundle-id", testBundle, "-environment", "Sandbox",
		"-base-url", mock.url, "2000000000000001")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 || !strings.HasPrefix(lines[0], "page 1:") || !strings.HasSuffix(lines[0], "more: true") ||
		!strings.HasPrefix(lines[1], "page 2:") || !strings.HasSuffix(lines[1], "more: false") {
		t.Fatalf("refund-history: %d %q %q", code, out, errOut)
	}
}

var goBlock = regexp.MustCompile("(?s)```go\n(.*?)```")

func TestDocSnippetsBuild(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "go.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := goBlock.FindAllSubmatch(doc, -1)
	if len(blocks) < 2 {
		t.Fatalf("%d Go snippets in docs/go.md", len(blocks))
	}
	for i, b := range blocks {
		dir := t.TempDir()
		mod := "module snippet\n\ngo 1.19\n\nrequire appstoreserver.dev/appstoreserver v0.0.0\n\nreplace appstoreserver.dev/appstoreserver => " +
			filepath.Join(repoRoot, "bindings", "go") + "\n"
		if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "main.go"), b[1], 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("go", "vet", ".")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("snippet %d of docs/go.md does not build: %v\n%s", i+1, err, out)
		}
	}
}
