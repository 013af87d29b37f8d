// Command sdkcheck is built by run-tests in a scratch module against a C SDK layout only (include, lib, a .pc file;
// no Swift toolchain on PATH), as a Go user with the SDK or the .deb installed builds: it verifies a transaction of
// the own PKI given on the command line and prints the library's version.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"appstoreserver.dev/appstoreserver"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: sdkcheck ROOT.der BUNDLE_ID TRANSACTION.jws")
		os.Exit(2)
	}
	root, err := os.ReadFile(os.Args[1])
	if err != nil {
		panic(err)
	}
	jws, err := os.ReadFile(os.Args[3])
	if err != nil {
		panic(err)
	}
	v, err := appstoreserver.NewSignedDataVerifier([][]byte{root}, false, appstoreserver.EnvironmentSandbox, os.Args[2], 0)
	if err != nil {
		panic(err)
	}
	defer v.Close()
	tx, err := v.VerifyAndDecodeTransaction(context.Background(), strings.TrimSpace(string(jws)))
	if err != nil {
		fmt.Println("verification failed:", err)
		os.Exit(1)
	}
	fmt.Printf("ok %s %s library %s\n", *tx.TransactionID, *tx.BundleID, appstoreserver.Version())
}
