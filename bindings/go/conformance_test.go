package appstoreserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const conformanceCases = 105 // 85 verifications of real Apple-signed data and derived negatives, 20 receipt extractions

// TestConformance runs the 105 cases of ../shared/conformance through the Go API; without that folder every case
// is reported SKIPPED, loudly ("go conformance: 0 passed, 0 failed, 105 skipped").
func TestConformance(t *testing.T) {
	tl := &tally{name: "conformance"}
	defer tl.print()
	dir := conformanceDir()
	if _, err := os.Stat(filepath.Join(dir, "manifest.json")); err != nil {
		tl.skipped = conformanceCases
		t.Skipf("SKIPPED: %s not found; real Apple data NOT checked", dir)
	}
	m := readManifest(t, dir)
	if len(m.Cases) != conformanceCases {
		t.Errorf("%d cases, want %d", len(m.Cases), conformanceCases)
	}
	for _, c := range m.Cases {
		c := c
		t.Run(str(c, "id"), func(t *testing.T) {
			var err error
			if strings.HasPrefix(str(c, "operation"), "verifyAndDecode") {
				err = checkCase(dir, c)
			} else {
				err = checkReceipt(dir, c)
			}
			tl.add(err == nil)
			if err != nil {
				t.Error(err)
			}
		})
	}
}

// TestTestPKI runs the own PKI's cases (Tests/support/testpki.py: every verify operation, valid and each failure,
// exact status and reason).
func TestTestPKI(t *testing.T) {
	tl := &tally{name: "testpki"}
	defer tl.print()
	dir := testpkiDir(t)
	m := readManifest(t, dir)
	if len(m.Cases) < 162 {
		t.Errorf("%d cases, want at least 162", len(m.Cases))
	}
	for _, c := range m.Cases {
		c := c
		t.Run(str(c, "id"), func(t *testing.T) {
			err := checkCase(dir, c)
			tl.add(err == nil)
			if err != nil {
				t.Error(err)
			}
		})
	}
}
