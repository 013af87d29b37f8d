package appstoreserver

import (
	"os"
	"testing"
)

// TestCanary fails when run-tests asks it to (APPSTORESERVER_GO_CANARY=1): run-tests checks that a failing test is
// counted as failed before it trusts its counts.
func TestCanary(t *testing.T) {
	if os.Getenv("APPSTORESERVER_GO_CANARY") != "1" {
		t.Skip("the canary runs only when run-tests asks for it")
	}
	t.Fatal("the canary fails, as it must")
}
