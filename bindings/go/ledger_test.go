package appstoreserver

// The purchase ledger from Go over Tests/support/lifecycles.py's signed lifecycles: every expectation of the
// hand-written scenarios (written there from Apple's documentation, never from the ledger's output) read back
// through the Go models, the oracle (no disagreement with Apple's data.status), idempotence, refused input.

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"appstoreserver.dev/appstoreserver/model"
)

type lifecycle struct {
	Name          string `json:"name"`
	HistoryDate   int64  `json:"historyDate"`
	Notifications []struct {
		Signed string `json:"signed"`
	} `json:"notifications"`
	History struct {
		Pages []struct {
			SignedTransactions []string `json:"signedTransactions"`
		} `json:"pages"`
		SignedRenewalInfos []string `json:"signedRenewalInfos"`
	} `json:"history"`
	Expect []map[string]any `json:"expect"`
}

func lifecycles(t *testing.T) (string, []lifecycle, []lifecycle) {
	d := lifecycleDoc(t)
	return d.BundleID, d.Scenarios, d.Random
}

type lifecyclesDoc struct {
	BundleID   string      `json:"bundleId"`
	Scenarios  []lifecycle `json:"scenarios"`
	Random     []lifecycle `json:"random"`
	Bitemporal []lifecycle `json:"bitemporal"`
}

func lifecycleDoc(t *testing.T) lifecyclesDoc {
	pki := testpkiDir(t)
	out := t.TempDir()
	if b, err := exec.Command("python3", filepath.Join(repoRoot, "Tests", "support", "lifecycles.py"), pki, out).CombinedOutput(); err != nil {
		t.Fatalf("lifecycles.py: %v\n%s", err, b)
	}
	var doc lifecyclesDoc
	readJSON(t, filepath.Join(out, "lifecycles.json"), &doc)
	return doc
}

func ingestAll(t *testing.T, l *Ledger, lc lifecycle) int {
	stored := 0
	count := func(r *model.LedgerIngestResult, err error) {
		if err != nil {
			t.Fatalf("%s: %v", lc.Name, err)
		}
		if r.Stored {
			stored++
		}
		if r.AppleStatus != nil && (r.Agrees == nil || !*r.Agrees) {
			t.Errorf("%s: the ledger disagrees with Apple: %+v", lc.Name, r)
		}
	}
	for _, n := range lc.Notifications {
		count(l.IngestNotification(n.Signed))
	}
	for _, p := range lc.History.Pages {
		for _, tx := range p.SignedTransactions {
			count(l.IngestTransaction(tx))
		}
	}
	for _, r := range lc.History.SignedRenewalInfos {
		count(l.IngestRenewalInfo(r))
	}
	return stored
}

var skipKeys = map[string]bool{"at": true, "asOf": true, "subscription": true, "customer": true, "rule": true, "deliveries": true}

// mismatches: the expectation's fields are a subset of the answer ("absent": missing; lists matched by productId).
func mismatches(answer map[string]any, want map[string]any) []string {
	if answer == nil {
		return []string{"no answer (unknown)"}
	}
	var problems []string
	for k, w := range want {
		if skipKeys[k] {
			continue
		}
		got, present := answer[k]
		switch wv := w.(type) {
		case string:
			if wv == "absent" {
				if present {
					problems = append(problems, fmt.Sprintf("%s: expected absent, got %v", k, got))
				}
				continue
			}
		case []any:
			gl, ok := got.([]any)
			if !ok || len(gl) != len(wv) {
				problems = append(problems, fmt.Sprintf("%s: expected %d entries, got %v", k, len(wv), got))
				continue
			}
			for _, x := range wv {
				xm := x.(map[string]any)
				found := false
				for _, g := range gl {
					gm := g.(map[string]any)
					if gm["productId"] == xm["productId"] {
						found = true
						for _, p := range mismatches(gm, xm) {
							problems = append(problems, fmt.Sprintf("%s[%v].%s", k, xm["productId"], p))
						}
					}
				}
				if !found {
					problems = append(problems, fmt.Sprintf("%s: no entry for %v", k, xm["productId"]))
				}
			}
			continue
		}
		if !reflect.DeepEqual(got, w) {
			problems = append(problems, fmt.Sprintf("%s: expected %v, got %v", k, w, got))
		}
	}
	return problems
}

// answerFor asks what an expectation is about; its "asOf": absent = the default (Subscription, Customer: now), "now"
// = the current time given explicitly, a number = that knowledge time (SubscriptionAsOf, CustomerAsOf).
func answerFor(t *testing.T, l *Ledger, e map[string]any) map[string]any {
	at := time.UnixMilli(int64(e["at"].(float64)))
	asOf, explicit := time.Time{}, false
	switch k := e["asOf"].(type) {
	case string:
		asOf, explicit = time.Now(), true
	case float64:
		asOf, explicit = time.UnixMilli(int64(k)), true
	}
	var v any
	var err error
	if id, ok := e["subscription"].(string); ok {
		var s *model.LedgerSubscription
		if explicit {
			s, err = l.SubscriptionAsOf(id, at, asOf)
		} else {
			s, err = l.Subscription(id, at)
		}
		if s == nil && err == nil {
			return nil
		}
		v = s
	} else if explicit {
		v, err = l.CustomerAsOf(e["customer"].(string), at, asOf)
	} else {
		v, err = l.Customer(e["customer"].(string), at)
	}
	if err != nil {
		t.Fatal(err)
	}
	m, _ := asJSON(t, v).(map[string]any)
	return m
}

// TestLedgerBitemporal: docs/ledger.md, "Bitemporal queries": a refund signed three days after its revocationDate, a
// backfill signed months after the purchases, a billing failure signed after the period ended, each delivery in a
// ledger of its own, asked now (the default and the current time given) and as known then (asOf = at).
func TestLedgerBitemporal(t *testing.T) {
	doc := lifecycleDoc(t)
	root, err := os.ReadFile(filepath.Join(testpkiDir(t), "root.der"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := NewSignedDataVerifier([][]byte{root}, false, EnvironmentSandbox, doc.BundleID, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if len(doc.Bitemporal) != 3 {
		t.Fatalf("%d bitemporal lifecycles", len(doc.Bitemporal))
	}
	checked, knownThen := 0, 0
	for _, lc := range doc.Bitemporal {
		for _, delivery := range []string{"notifications", "history", "both"} {
			d := lc
			if delivery == "history" {
				d.Notifications = nil
			} else if delivery == "notifications" {
				d.History.Pages, d.History.SignedRenewalInfos = nil, nil
			}
			l, err := OpenLedger("sqlite::memory:", v)
			if err != nil {
				t.Fatal(err)
			}
			ingestAll(t, l, d)
			for _, e := range lc.Expect {
				holds := false
				for _, x := range e["deliveries"].([]any) {
					holds = holds || x == delivery
				}
				if !holds {
					continue
				}
				checked++
				if _, ok := e["asOf"].(float64); ok {
					knownThen++
				}
				for _, p := range mismatches(answerFor(t, l, e), e) {
					t.Errorf("%s [%s] at %v as of %v (%v): %s", lc.Name, delivery, e["at"], e["asOf"], e["rule"], p)
				}
			}
			if s, err := l.Summary(); err != nil || len(s.Disagreements) != 0 {
				t.Errorf("%s [%s]: summary %+v %v", lc.Name, delivery, s, err)
			}
			l.Close()
		}
	}
	if checked < 20 || knownThen < 4 {
		t.Fatalf("%d expectations checked, %d as known then", checked, knownThen)
	}
	// Bad instants: before 1970 is refused with INVALID_ARGUMENT naming the argument; asOf before at is a question of
	// its own (what was believed then about a later instant): the REFUND signed later is unknown then (S2).
	l, err := OpenLedger("sqlite::memory:", v)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	lc := doc.Bitemporal[0]
	lc.History.Pages, lc.History.SignedRenewalInfos = nil, nil
	ingestAll(t, l, lc)
	e := lc.Expect[0]
	id, at := e["subscription"].(string), time.UnixMilli(int64(e["at"].(float64)))
	var ae *Error
	if _, err := l.SubscriptionAsOf(id, at, time.UnixMilli(-5)); !errors.As(err, &ae) || ae.Status != VerificationStatusInvalidArgument ||
		!strings.Contains(ae.Message, "as_of_ms") {
		t.Errorf("asOf before 1970: %v", err)
	}
	if _, err := l.CustomerAsOf("x", time.Time{}, time.UnixMilli(-5)); !errors.As(err, &ae) || ae.Status != VerificationStatusInvalidArgument {
		t.Errorf("customer asOf before 1970: %v", err)
	}
	s, err := l.SubscriptionAsOf(id, at, at.Add(-48*time.Hour))
	if err != nil || s == nil || s.Status == nil || int(*s.Status) != 1 || s.RevocationDate != nil {
		t.Errorf("asOf before at: %+v %v", s, err)
	}
}

func TestLedgerLifecycles(t *testing.T) {
	_, scenarios, random := lifecycles(t)
	v := testLedgerVerifier(t)
	l, err := OpenLedger("sqlite:"+filepath.Join(t.TempDir(), "ledger.db"), v)
	if err != nil {
		t.Fatal(err)
	}
	v.Close() // the ledger keeps its own reference
	defer l.Close()
	tl := &tally{name: "ledger scenarios"}
	defer tl.print()
	stored, notifications := 0, 0
	for _, lc := range append(append([]lifecycle{}, scenarios...), random...) {
		stored += ingestAll(t, l, lc)
		notifications += len(lc.Notifications)
	}
	for _, lc := range scenarios {
		var problems []string
		checked := 0
		for _, e := range lc.Expect {
			// Every delivery was given (notifications and history): the expectations of "both" hold.
			if ds, ok := e["deliveries"].([]any); ok {
				listed := false
				for _, d := range ds {
					listed = listed || d == "both"
				}
				if !listed {
					continue
				}
			}
			checked++
			for _, p := range mismatches(answerFor(t, l, e), e) {
				problems = append(problems, fmt.Sprintf("at %v (%v): %s", e["at"], e["rule"], p))
			}
		}
		tl.add(len(problems) == 0 && checked > 0)
		if len(problems) > 0 || checked == 0 {
			t.Errorf("%s (%d checked): %v", lc.Name, checked, problems)
		}
	}
	s, err := l.Summary()
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Disagreements) != 0 || int(s.Events) != stored || int(s.Notifications) != notifications {
		t.Fatalf("summary %+v (stored %d, notifications %d)", s, stored, notifications)
	}
	// Idempotent: everything again stores nothing.
	if again := ingestAll(t, l, scenarios[0]); again != 0 {
		t.Fatalf("%d stored again", again)
	}
	// Refused input changes nothing: the verifier's error.
	_, err = l.IngestTransaction(scenarios[0].Notifications[0].Signed)
	var ve *VerificationError
	if !errors.As(err, &ve) || ve.Reason != ReasonWrongKind {
		t.Fatalf("a notification given as a transaction: %v", err)
	}
	if _, err := l.IngestNotification("not.a.jws"); !errors.As(err, &ve) {
		t.Fatalf("garbage: %v", err)
	}
	if s2, _ := l.Summary(); !reflect.DeepEqual(asJSON(t, s2), asJSON(t, s)) {
		t.Fatalf("refused input changed the ledger")
	}
	if _, err := OpenLedger("nosuch:whatever", v); err == nil {
		t.Fatal("a closed verifier or a bad URL was accepted")
	}
	l.Close()
	if _, err := l.Summary(); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
	_ = json.Marshal
}

// TestLedgerImportJSONL: every line format, bad lines by number (expected from the file written here), and a second
// run that stores nothing twice (docs/ledger.md, "Bulk import").
func TestLedgerImportJSONL(t *testing.T) {
	_, scenarios, _ := lifecycles(t)
	v := testLedgerVerifier(t)
	defer v.Close()
	var lines []string
	distinct := map[string]bool{}
	add := func(member, jws string) {
		b, _ := json.Marshal(map[string]string{member: jws})
		lines = append(lines, string(b))
		distinct[jws] = true
	}
	for _, lc := range scenarios {
		for _, n := range lc.Notifications {
			add("notification", n.Signed)
		}
		for _, p := range lc.History.Pages {
			for _, tx := range p.SignedTransactions {
				add("transaction", tx)
			}
		}
		for _, r := range lc.History.SignedRenewalInfos {
			add("renewalInfo", r)
		}
	}
	values := len(lines)
	lines = append(lines[:4], append([]string{`{"unknown": "x"}`}, lines[4:]...)...) // line 5
	file := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(file, []byte(fmt.Sprintln(joinLines(lines))), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := OpenLedger("sqlite:"+filepath.Join(t.TempDir(), "ledger.db"), v)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	r, err := l.ImportJSONL(file, 6)
	if err != nil {
		t.Fatal(err)
	}
	if r.Read != int64(len(lines)) || r.Stored != int64(len(distinct)) || r.AlreadyPresent != int64(values-len(distinct)) ||
		r.RefusedCount != 1 || len(r.Refused) != 1 || r.Refused[0].Line != 5 || r.Refused[0].Reason != "malformed" {
		t.Fatalf("first import: %+v", r)
	}
	again, err := l.ImportJSONL(file, 0)
	if err != nil {
		t.Fatal(err)
	}
	if again.Stored != 0 || again.AlreadyPresent != int64(values) || again.RefusedCount != 1 {
		t.Fatalf("second import: %+v", again)
	}
	if _, err := l.ImportJSONL(filepath.Join(t.TempDir(), "missing.jsonl"), 0); err == nil {
		t.Fatal("a missing file was imported")
	}
}

func joinLines(lines []string) string {
	out := ""
	for i, s := range lines {
		if i > 0 {
			out += "\n"
		}
		out += s
	}
	return out
}

// Disagreements (C: appstore_ledger_query_disagreements): an empty ledger's one page, and the cursors and limits the
// library refuses (the pages themselves: Swift's LedgerOracleVerdictTests, the tool's tests on SQLite and PostgreSQL).
func TestLedgerDisagreementsArguments(t *testing.T) {
	v := testLedgerVerifier(t)
	defer v.Close()
	l, err := OpenLedger("sqlite::memory:", v)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, limit := range []uint32{0, 1, 10000} {
		page, err := l.Disagreements("", limit)
		if err != nil || len(page.Disagreements) != 0 || page.Next != nil {
			t.Fatalf("limit %d: %+v, %v", limit, page, err)
		}
	}
	for _, c := range []struct {
		after string
		limit uint32
		want  string
	}{{"CONTRADICTION:soon:x", 10, "not a cursor"}, {"", 10001, "limit must be"}, {"a\x00b", 10, "after"}} {
		_, err := l.Disagreements(c.after, c.limit)
		var e *Error
		if !errors.As(err, &e) || e.Status != VerificationStatusInvalidArgument || !strings.Contains(e.Message, c.want) {
			t.Errorf("Disagreements(%q, %d): %v, want an invalid argument saying %q", c.after, c.limit, err, c.want)
		}
	}
}

// testLedgerVerifier is a Sandbox verifier of the test PKI for the lifecycles' bundle.
func testLedgerVerifier(t *testing.T) *SignedDataVerifier {
	t.Helper()
	bundle, _, _ := lifecycles(t)
	root, err := os.ReadFile(filepath.Join(testpkiDir(t), "root.der"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := NewSignedDataVerifier([][]byte{root}, false, EnvironmentSandbox, bundle, 0)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// SubscriptionIds and CustomerIds (C: appstore_ledger_query_subscription_ids, _customer_ids): pages of any size hold
// every id once, in byte order, only the last without Next. Expected from the transactions' own payloads: a
// subscription is an auto-renewable originalTransactionId; a customer is the appAccountToken in lowercase, else the
// originalTransactionId.
func TestLedgerIdPages(t *testing.T) {
	_, scenarios, _ := lifecycles(t)
	v := testLedgerVerifier(t)
	defer v.Close()
	l, err := OpenLedger("sqlite::memory:", v)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if page, err := l.SubscriptionIds("", 0); err != nil || len(page.Ids) != 0 || page.Next != nil {
		t.Fatalf("an empty ledger: %+v, %v", page, err)
	}
	subs, custs := map[string]bool{}, map[string]bool{}
	for _, lc := range scenarios {
		for _, p := range lc.History.Pages {
			for _, tx := range p.SignedTransactions {
				if _, err := l.IngestTransaction(tx); err != nil {
					t.Fatal(err)
				}
				seg := strings.Split(tx, ".")[1]
				raw, err := base64.RawURLEncoding.DecodeString(seg)
				if err != nil {
					t.Fatal(err)
				}
				var payload struct {
					Type, OriginalTransactionID, AppAccountToken string
				}
				if err := json.Unmarshal(raw, &payload); err != nil {
					t.Fatal(err)
				}
				if payload.Type == "Auto-Renewable Subscription" {
					subs[payload.OriginalTransactionID] = true
				}
				if payload.AppAccountToken != "" {
					custs[strings.ToLower(payload.AppAccountToken)] = true
				} else {
					custs[payload.OriginalTransactionID] = true
				}
			}
		}
	}
	sorted := func(m map[string]bool) []string {
		out := make([]string, 0, len(m))
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out) // byte order
		return out
	}
	for _, c := range []struct {
		name string
		read func(string, uint32) (*model.LedgerIdPage, error)
		want []string
	}{{"SubscriptionIds", l.SubscriptionIds, sorted(subs)}, {"CustomerIds", l.CustomerIds, sorted(custs)}} {
		if len(c.want) < 5 {
			t.Fatalf("%s: only %d expected", c.name, len(c.want))
		}
		for _, limit := range []uint32{1, 4, uint32(len(c.want)), 10000} {
			var got []string
			after := ""
			for {
				page, err := c.read(after, limit)
				if err != nil {
					t.Fatal(err)
				}
				if uint32(len(page.Ids)) != limit && page.Next != nil {
					t.Fatalf("%s %d: a short page with a next", c.name, limit)
				}
				got = append(got, page.Ids...)
				if page.Next == nil {
					break
				}
				after = *page.Next
			}
			if strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Errorf("%s limit %d: %v, want %v", c.name, limit, got, c.want)
			}
		}
		_, err := c.read("", 10001)
		var e *Error
		if !errors.As(err, &e) || e.Status != VerificationStatusInvalidArgument || !strings.Contains(e.Message, "limit must be") {
			t.Errorf("%s limit 10001: %v", c.name, err)
		}
	}
}

// ExportJSONL (C: appstore_ledger_export_jsonl): every stored value once, byte for byte as ingested, in ImportJSONL's
// format and the order stored (expected from the values this test gave); imported into a new ledger, the same
// summary.
func TestLedgerExportJSONL(t *testing.T) {
	_, scenarios, _ := lifecycles(t)
	v := testLedgerVerifier(t)
	defer v.Close()
	dir := t.TempDir()
	a, err := OpenLedger("sqlite:"+filepath.Join(dir, "a.db"), v)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var want []string
	seen := map[string]bool{}
	add := func(member, jws string, r *model.LedgerIngestResult, err error) {
		if err != nil {
			t.Fatal(err)
		}
		if r.Stored != !seen[jws] {
			t.Fatalf("stored %v for a value seen %v", r.Stored, seen[jws])
		}
		if r.Stored {
			b, _ := json.Marshal(map[string]string{member: jws})
			want = append(want, string(b))
		}
		seen[jws] = true
	}
	for _, lc := range scenarios[:6] {
		for _, n := range lc.Notifications {
			r, err := a.IngestNotification(n.Signed)
			add("notification", n.Signed, r, err)
		}
		for _, p := range lc.History.Pages {
			for _, tx := range p.SignedTransactions {
				r, err := a.IngestTransaction(tx)
				add("transaction", tx, r, err)
			}
		}
	}
	file := filepath.Join(dir, "export.jsonl")
	r, err := a.ExportJSONL(file)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != strings.Join(want, "\n")+"\n" || r.Exported != int64(len(want)) || r.RenewalInfos != 0 {
		t.Fatalf("export: %+v, %d bytes; want %d lines", r, len(got), len(want))
	}
	if rv, err := a.Reverify(); err != nil || rv.Checked != int64(len(want)) || len(rv.Refused) != 0 {
		t.Fatalf("reverify: %+v, %v", rv, err)
	}
	b, err := OpenLedger("sqlite:"+filepath.Join(dir, "b.db"), v)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if i, err := b.ImportJSONL(file, 0); err != nil || i.Stored != int64(len(want)) || i.RefusedCount != 0 {
		t.Fatalf("import: %+v, %v", i, err)
	}
	sa, _ := a.Summary()
	sb, _ := b.Summary()
	if !reflect.DeepEqual(sa, sb) {
		t.Fatalf("summaries differ: %+v, %+v", sa, sb)
	}
	_, err = a.ExportJSONL(filepath.Join(dir, "missing-dir", "x.jsonl"))
	var e *Error
	if !errors.As(err, &e) || e.Status != VerificationStatusInvalidArgument || !strings.Contains(e.Message, "cannot create the export file") {
		t.Fatalf("a missing directory: %v", err)
	}
}

// A ledger is bound to its app and environment (docs/ledger.md, "Identity"): opened with a Production verifier, or
// with one for another app, a Sandbox ledger's file is refused (ConfigurationError, ReasonLedgerIdentityMismatch,
// naming the identity) and its bytes are untouched.
func TestLedgerAnotherIdentityIsRefusedAndNothingWritten(t *testing.T) {
	bundle, scenarios, _ := lifecycles(t)
	v := testLedgerVerifier(t)
	defer v.Close()
	db := filepath.Join(t.TempDir(), "ledger.db")
	l, err := OpenLedger("sqlite:"+db, v)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range scenarios[0].Notifications {
		if _, err := l.IngestNotification(n.Signed); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	before, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	root, _ := os.ReadFile(filepath.Join(testpkiDir(t), "root.der"))
	for _, c := range []struct {
		env      Environment
		bundle   string
		mentions string
	}{{EnvironmentProduction, bundle, "Production"}, {EnvironmentSandbox, "com.example.other", "com.example.other"}} {
		other, err := NewSignedDataVerifier([][]byte{root}, false, c.env, c.bundle, 1234)
		if err != nil {
			t.Fatal(err)
		}
		_, err = OpenLedger("sqlite:"+db, other)
		other.Close()
		var e *Error
		if !errors.As(err, &e) || e.Status != VerificationStatusConfigurationError || e.Reason != ReasonLedgerIdentityMismatch ||
			!strings.Contains(e.Message, c.mentions) {
			t.Errorf("%s %s: %v, want a ledger_identity_mismatch naming %q", c.env, c.bundle, err, c.mentions)
		}
		after, _ := os.ReadFile(db)
		if !reflect.DeepEqual(before, after) {
			t.Errorf("%s %s: the file changed", c.env, c.bundle)
		}
		for _, suffix := range []string{"-wal", "-journal"} {
			if st, err := os.Stat(db + suffix); err == nil && st.Size() > 0 {
				t.Errorf("%s %s: %s written (%d bytes)", c.env, c.bundle, suffix, st.Size())
			}
		}
	}
}
