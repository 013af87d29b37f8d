// Command refund-history prints every page of a customer's refund history through the App Store Server API (Get
// Refund History), with retries and the Sandbox fallback that App Review's purchases need.
//
//	APPSTORE_PRIVATE_KEY="$(cat SubscriptionKey_ABC123DEFG.p8)" go run ./refund-history \
//	    -key-id ABC123DEFG -issuer-id 57246542-... -bundle-id com.example.app 2000000000000001
//
// -base-url points the client at another server (a test server); without it, Apple's.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"appstoreserver.dev/appstoreserver"
	"appstoreserver.dev/appstoreserver/model"
)

func main() {
	keyID := flag.String("key-id", "", "the key's ID (App Store Connect)")
	issuerID := flag.String("issuer-id", "", "the issuer ID (App Store Connect)")
	bundleID := flag.String("bundle-id", "", "the app's bundle ID")
	environment := flag.String("environment", "Production", "Sandbox or Production")
	baseURL := flag.String("base-url", "", "another server instead of Apple's")
	flag.Parse()
	if flag.NArg() != 1 || *keyID == "" || *issuerID == "" || *bundleID == "" {
		fmt.Fprintln(os.Stderr, "usage: refund-history -key-id ID -issuer-id ID -bundle-id ID [-environment E] transaction-id")
		os.Exit(2)
	}
	// The .p8 text; never put a key on a command line.
	key, err := appstoreserver.NewSigningKey([]byte(os.Getenv("APPSTORE_PRIVATE_KEY")), *keyID, *issuerID, *bundleID)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer key.Close()
	env := appstoreserver.Environment(*environment)
	client, err := appstoreserver.NewAppStoreServerAPIClientWithKey(key, env, &appstoreserver.ClientOptions{
		BaseURL: *baseURL, MaxRetries: 3, SandboxFallback: env == appstoreserver.EnvironmentProduction})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer client.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	number := 0
	err = client.GetRefundHistoryPages(ctx, flag.Arg(0), func(page *model.RefundHistoryResponse) bool {
		number++
		fmt.Printf("page %d: %d refunded transactions, more: %t\n", number, len(page.SignedTransactions),
			page.HasMore != nil && *page.HasMore)
		return true // false stops after this page
	})
	var apiErr *appstoreserver.APIError
	if errors.As(err, &apiErr) {
		fmt.Fprintln(os.Stderr, "failed:", err) // HTTP status, Apple's error code and message, Retry-After
		os.Exit(1)
	} else if err != nil {
		fmt.Fprintln(os.Stderr, "failed:", err)
		os.Exit(1)
	}
}
