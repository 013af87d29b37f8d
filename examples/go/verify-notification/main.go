// Command verify-notification verifies an App Store Server Notification V2 (the body Apple POSTs to your server) and
// prints what it says.
//
//	go run ./verify-notification [-environment Production -app-apple-id 1234] [-root FILE] notification.json com.example.app
//
// Apple's root certificate comes with the library (appstoreserver.AppleRootCAG3(), checked against the fingerprint
// Apple publishes); -root FILE trusts another root instead (DER or PEM), e.g. for a test PKI.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"appstoreserver.dev/appstoreserver"
)

func main() {
	environment := flag.String("environment", "Sandbox", "Sandbox or Production")
	appAppleID := flag.Int64("app-apple-id", 0, "the app's Apple ID (required for Production)")
	rootFile := flag.String("root", "", "a root certificate file (DER or PEM) instead of Apple's")
	flag.Parse()
	if flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: verify-notification [flags] notification.json bundle-id")
		os.Exit(2)
	}
	text, err := os.ReadFile(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	signedPayload := strings.TrimSpace(string(text))
	if strings.HasPrefix(signedPayload, "{") { // the request body {"signedPayload": "..."}
		var body struct {
			SignedPayload string `json:"signedPayload"`
		}
		if err := json.Unmarshal(text, &body); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		signedPayload = body.SignedPayload
	}
	roots := [][]byte{appstoreserver.AppleRootCAG3()}
	if *rootFile != "" {
		root, err := os.ReadFile(*rootFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		roots = [][]byte{root}
	}
	verifier, err := appstoreserver.NewSignedDataVerifier(roots, false, appstoreserver.Environment(*environment),
		flag.Arg(1), *appAppleID)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer verifier.Close()

	ctx := context.Background()
	notification, err := verifier.VerifyAndDecodeNotification(ctx, signedPayload)
	var failed *appstoreserver.VerificationError
	if errors.As(err, &failed) {
		fmt.Fprintln(os.Stderr, "NOT VERIFIED:", err) // the status, the reason and what exactly failed
		os.Exit(1)
	} else if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	line := "type: " + string(*notification.NotificationType)
	if notification.Subtype != nil {
		line += " " + string(*notification.Subtype)
	}
	fmt.Println(line)
	if data := notification.Data; data != nil {
		fmt.Printf("bundle: %s, environment: %s\n", deref(data.BundleID), deref((*string)(data.Environment)))
		if data.SignedTransactionInfo != nil {
			transaction, err := verifier.VerifyAndDecodeTransaction(ctx, *data.SignedTransactionInfo)
			if err != nil {
				fmt.Fprintln(os.Stderr, "NOT VERIFIED:", err)
				os.Exit(1)
			}
			fmt.Printf("transaction: %s (%s)\n", deref(transaction.TransactionID), deref(transaction.ProductID))
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
