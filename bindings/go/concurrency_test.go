package appstoreserver

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if testpkiPath != "" && os.Getenv("APPSTORESERVER_TESTPKI") == "" {
		os.RemoveAll(testpkiPath)
	}
	os.Exit(code)
}

// pkiVerifier is a verifier of the own PKI's Sandbox data (bundle com.example.testpki), and its valid transaction.
func pkiVerifier(t testing.TB) (*SignedDataVerifier, string, string) {
	dir := testpkiDir(t.(*testing.T))
	root, err := os.ReadFile(filepath.Join(dir, "root.der"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := NewSignedDataVerifier([][]byte{root}, false, EnvironmentSandbox, "com.example.testpki", 0)
	if err != nil {
		t.Fatal(err)
	}
	tx := readText(t.(*testing.T), filepath.Join(dir, "jws", "tx-valid.jws"))
	bad := readText(t.(*testing.T), filepath.Join(dir, "jws", "tx-bad-signature-bit-flip.jws"))
	return v, tx, bad
}

// Sixty-four goroutines share one verifier (run under -race by run-tests): every call returns its own result.
func TestOneVerifierManyGoroutines(t *testing.T) {
	v, tx, bad := pkiVerifier(t)
	defer v.Close()
	const goroutines, calls = 64, 20
	var wg sync.WaitGroup
	var failures atomic.Int64
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < calls; i++ {
				if (g+i)%4 == 3 {
					_, err := v.VerifyAndDecodeTransaction(context.Background(), bad)
					var ve *VerificationError
					if !errors.As(err, &ve) || ve.Reason != ReasonBadSignature {
						failures.Add(1)
					}
					continue
				}
				p, err := v.VerifyAndDecodeTransaction(context.Background(), tx)
				if err != nil || p.TransactionID == nil || *p.TransactionID != "2000000912345678" {
					failures.Add(1)
				}
			}
		}(g)
	}
	wg.Wait()
	if n := failures.Load(); n != 0 {
		t.Fatalf("%d calls returned the wrong result", n)
	}
	hits, misses, _, err := v.CacheStats()
	if err != nil || hits == 0 || misses == 0 {
		t.Fatalf("cache stats %d hits %d misses (%v)", hits, misses, err)
	}
}

// Close while other goroutines verify: each call either finishes or gets ErrClosed; nothing touches freed memory.
// The goroutines verify until they see ErrClosed, and Close comes once some calls have succeeded, so both outcomes
// happen whatever the machine's load.
func TestCloseUnderLoad(t *testing.T) {
	v, tx, _ := pkiVerifier(t)
	var wg sync.WaitGroup
	var closed, ok, other atomic.Int64
	const goroutines = 16
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000000; i++ {
				_, err := v.VerifyAndDecodeTransaction(context.Background(), tx)
				switch {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, ErrClosed):
					closed.Add(1)
					return
				default:
					other.Add(1)
					return
				}
			}
		}()
	}
	for ok.Load() < goroutines && other.Load() == 0 {
		runtime.Gosched()
	}
	v.Close()
	v.Close() // twice is fine
	wg.Wait()
	if other.Load() != 0 || closed.Load() != goroutines {
		t.Fatalf("ok %d, closed %d, other %d", ok.Load(), closed.Load(), other.Load())
	}
}
