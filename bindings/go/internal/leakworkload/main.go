// Command leakworkload is the Go workload of the leak check (Tests/support/leakcheck.py judges it; bindings/go/leak-check
// and scripts/leak-check go run the long form, run-tests the short one).
//
//	leakworkload TESTPKI_DIR CALLS none|handles|malloc
//
// CALLS verifications as a server makes them: valid transactions, failures (errors carrying the library's),
// notifications, and every 100th call a verifier made and dropped for its finalizer and an offer signature. At the
// start and after every thirtieth of the calls, after runtime.GC() (finalizers run on their own goroutine: twice,
// with a yield between), it prints "leak-sample CALLS LIVE_OBJECTS MALLOC_IN_USE". Self-test modes: handles keeps a
// verifier per call (its handle never freed), malloc keeps 1,024 bytes of C malloc per call.
package main

// #include <stdlib.h>
import "C"

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"appstoreserver.dev/appstoreserver"
	"appstoreserver.dev/appstoreserver/internal/capi"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: leakworkload TESTPKI_DIR CALLS none|handles|malloc")
		os.Exit(2)
	}
	dir, mode := os.Args[1], os.Args[3]
	calls, err := strconv.Atoi(os.Args[2])
	if err != nil || calls <= 0 || (mode != "none" && mode != "handles" && mode != "malloc") {
		fmt.Fprintln(os.Stderr, "usage: leakworkload TESTPKI_DIR CALLS none|handles|malloc")
		os.Exit(2)
	}
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		return b
	}
	root := read("root.der")
	good := strings.TrimSpace(string(read("jws/tx-valid.jws")))
	bad := strings.TrimSpace(string(read("jws/tx-wrong-bundle.jws")))
	notification := strings.TrimSpace(string(read("jws/notif-valid-did-renew.jws")))
	key := read("leaf_key.pem") // PKCS#8 P-256, as App Store Connect hands out
	const bundle = "com.example.testpki"
	ctx := context.Background()
	sample := func(done int) {
		runtime.GC()
		runtime.Gosched()
		runtime.GC()
		fmt.Printf("leak-sample %d %d %d\n", done, capi.DebugLiveObjects(), capi.DebugMallocInUse())
	}
	v, err := appstoreserver.NewSignedDataVerifier([][]byte{root}, false, appstoreserver.EnvironmentSandbox, bundle, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer v.Close()
	var kept []any
	var blocks []unsafe.Pointer
	failures := 0
	sample(0)
	for i := 1; i <= calls; i++ {
		switch i % 10 {
		case 0:
			_, err := v.VerifyAndDecodeTransaction(ctx, bad)
			var failed *appstoreserver.VerificationError
			if !errors.As(err, &failed) {
				fmt.Fprintln(os.Stderr, "a wrong-bundle transaction did not fail verification:", err)
				os.Exit(1)
			}
			failures++
		case 5:
			if _, err := v.VerifyAndDecodeNotification(ctx, notification); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		default:
			if _, err := v.VerifyAndDecodeTransaction(ctx, good); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
		if i%100 == 0 {
			if _, err := appstoreserver.NewSignedDataVerifier([][]byte{root}, true, appstoreserver.EnvironmentSandbox, "b", 0); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			c, err := appstoreserver.NewPromotionalOfferV2SignatureCreator(key, "KEYID", "issuer", bundle)
			if err == nil {
				_, err = c.CreateSignature("p", "o", "")
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
		switch mode {
		case "handles":
			kept = append(kept, must(appstoreserver.NewSignedDataVerifier([][]byte{root}, false, appstoreserver.EnvironmentSandbox, bundle, 0)))
		case "malloc":
			p := C.malloc(1024)
			*(*byte)(p) = 1
			blocks = append(blocks, p)
		}
		if i*30/calls != (i-1)*30/calls {
			sample(i)
		}
	}
	if failures != calls/10 {
		fmt.Fprintf(os.Stderr, "%d failures, %d expected\n", failures, calls/10)
		os.Exit(1)
	}
	runtime.KeepAlive(kept)
	runtime.KeepAlive(blocks)
}

func must(v *appstoreserver.SignedDataVerifier, err error) *appstoreserver.SignedDataVerifier {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	return v
}
