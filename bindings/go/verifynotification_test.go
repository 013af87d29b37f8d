package appstoreserver

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"appstoreserver.dev/appstoreserver/model"
)

// otherAppNotification is a LocalTesting notification (signatures are not checked there) naming another app.
func otherAppNotification() string {
	b := base64.RawURLEncoding
	payload := `{"notificationType":"TEST","notificationUUID":"3f2f3b2c-4a5b-4c6d-8e9f-0a1b2c3d4e5f","version":"2.0",` +
		`"signedDate":1700000000000,"data":{"bundleId":"com.other","appAppleId":99,"environment":"LocalTesting"}}`
	return b.EncodeToString([]byte(`{"alg":"ES256"}`)) + "." + b.EncodeToString([]byte(payload)) + ".c2ln"
}

// VerifierOptions.NotificationCheck (the Go form of Apple's verifyNotification hook) decides on the app.
func TestNotificationCheck(t *testing.T) {
	ctx := context.Background()
	jws := otherAppNotification()
	plain, err := NewSignedDataVerifier(nil, false, EnvironmentLocalTesting, "com.example.testpki", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	var ve *VerificationError
	if _, err := plain.VerifyAndDecodeNotification(ctx, jws); !errors.As(err, &ve) || ve.Status != VerificationStatusInvalidAppIdentifier {
		t.Fatalf("without a check: %v, want INVALID_APP_IDENTIFIER", err)
	}
	var seen []any
	multi, err := NewSignedDataVerifierWithOptions(VerifierOptions{Environment: EnvironmentLocalTesting,
		BundleID: "com.example.testpki",
		NotificationCheck: func(v *SignedDataVerifier, bundleID string, appAppleID int64, env Environment) error {
			seen = append(seen, bundleID, appAppleID, env)
			if bundleID == "com.other" {
				return nil
			}
			return v.CheckNotificationApp(bundleID, appAppleID, env)
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer multi.Close()
	n, err := multi.VerifyAndDecodeNotification(ctx, jws)
	if err != nil || n.NotificationType == nil || *n.NotificationType != model.NotificationTypeV2Test {
		t.Fatalf("with a check that accepts com.other: %v, %v", n, err)
	}
	if len(seen) != 3 || seen[0] != "com.other" || seen[1] != int64(99) || seen[2] != EnvironmentLocalTesting {
		t.Fatalf("the check saw %v", seen)
	}
	refusal := errors.New("not ours")
	refusing, err := NewSignedDataVerifierWithOptions(VerifierOptions{Environment: EnvironmentLocalTesting,
		BundleID:          "com.example.testpki",
		NotificationCheck: func(*SignedDataVerifier, string, int64, Environment) error { return refusal }})
	if err != nil {
		t.Fatal(err)
	}
	defer refusing.Close()
	if _, err := refusing.VerifyAndDecodeNotification(ctx, jws); !errors.Is(err, refusal) {
		t.Fatalf("a refusing check: %v", err)
	}
	// The default check on its own.
	if err := plain.CheckNotificationApp("com.example.testpki", 0, EnvironmentLocalTesting); err != nil {
		t.Fatal(err)
	}
	if err := plain.CheckNotificationApp("com.example.testpki", 0, EnvironmentSandbox); !errors.As(err, &ve) ||
		ve.Status != VerificationStatusInvalidEnvironment || !strings.Contains(ve.Error(), "Sandbox") {
		t.Fatalf("another environment: %v", err)
	}
}
