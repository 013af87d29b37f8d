package appstoreserver

// The models' generated JSON decoder: the same values as encoding/json on real payloads, and any input (mutations
// of real payloads, hostile nesting) gives a value or an error, never a panic.

import (
	"encoding/base64"
	"encoding/json"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"appstoreserver.dev/appstoreserver/model"
)

func payloadsOf(t *testing.T, dir string) [][]byte {
	var out [][]byte
	files, _ := filepath.Glob(filepath.Join(dir, "jws", "*.jws"))
	real, _ := filepath.Glob(filepath.Join(conformanceDir(), "real", "jws", "*.jws"))
	for _, f := range append(files, real...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		parts := strings.Split(strings.TrimSpace(string(b)), ".")
		if len(parts) != 3 {
			continue
		}
		if p, err := base64.RawURLEncoding.DecodeString(parts[1]); err == nil && json.Valid(p) {
			out = append(out, p)
		}
	}
	return out
}

type plainTransaction model.JWSTransactionDecodedPayload
type plainNotification model.ResponseBodyV2DecodedPayload
type plainRenewal model.JWSRenewalInfoDecodedPayload

func TestDecoderMatchesEncodingJSON(t *testing.T) {
	payloads := payloadsOf(t, testpkiDir(t))
	if len(payloads) < 100 {
		t.Fatalf("only %d payloads", len(payloads))
	}
	compared := 0
	for _, p := range payloads {
		for _, pair := range [][2]any{
			{new(model.JWSTransactionDecodedPayload), new(plainTransaction)},
			{new(model.ResponseBodyV2DecodedPayload), new(plainNotification)},
			{new(model.JWSRenewalInfoDecodedPayload), new(plainRenewal)},
		} {
			errFast := pair[0].(json.Unmarshaler).UnmarshalJSON(p)
			errStd := json.Unmarshal(p, pair[1])
			if (errFast == nil) != (errStd == nil) {
				t.Fatalf("%s: decoder %v, encoding/json %v", p, errFast, errStd)
			}
			if errFast != nil {
				continue
			}
			a, _ := json.Marshal(pair[0])
			b, _ := json.Marshal(pair[1])
			if string(a) != string(b) {
				t.Fatalf("%s:\n decoder       %s\n encoding/json %s", p, a, b)
			}
			compared++
		}
	}
	if compared < 100 {
		t.Fatalf("only %d comparisons", compared)
	}
}

func TestDecoderNeverPanics(t *testing.T) {
	payloads := payloadsOf(t, testpkiDir(t))
	r := rand.New(rand.NewSource(33))
	targets := []func() json.Unmarshaler{
		func() json.Unmarshaler { return new(model.JWSTransactionDecodedPayload) },
		func() json.Unmarshaler { return new(model.ResponseBodyV2DecodedPayload) },
		func() json.Unmarshaler { return new(model.StatusResponse) },
		func() json.Unmarshaler { return new(model.LedgerCustomer) },
	}
	hostile := [][]byte{[]byte(strings.Repeat("[", 100000)), []byte(strings.Repeat(`{"a":`, 50000)), []byte(`"\ud800"`),
		[]byte(`{"data":{"status":1e999}}`), []byte(`{"quantity":1.5}`), []byte(`{"price":99999999999999999999}`),
		[]byte("{\"bundleId\":\"\xff\xfe\"}"), []byte(`{"signedDate":"x"}`), []byte(`{`), []byte(``), []byte(`null`),
		[]byte(`{"quantity":+1}`), []byte(`{"quantity":01}`), []byte(`{"x":.5}`), []byte(`{"x":1.}`), []byte(`{"x":1e}`),
		[]byte(`{"a":1,}`), []byte(`[1 2]`), []byte(`{"a" 1}`), []byte(`{"a":tru}`), []byte(`"\x"`)}
	inputs := append([][]byte{}, hostile...)
	for i := 0; i < 3000; i++ {
		p := append([]byte(nil), payloads[r.Intn(len(payloads))]...)
		switch r.Intn(3) {
		case 0:
			p[r.Intn(len(p))] = byte(r.Intn(256))
		case 1:
			p = p[:r.Intn(len(p))]
		default:
			at := r.Intn(len(p))
			p = append(p[:at], append([]byte(`{"x":[1,"\u00e9",{}]}`), p[at:]...)...)
		}
		inputs = append(inputs, p)
	}
	for _, in := range inputs {
		for _, mk := range targets {
			func() {
				defer func() {
					if x := recover(); x != nil {
						t.Fatalf("panic %v on %q", x, in)
					}
				}()
				fast := mk().UnmarshalJSON(in)
				if fast == nil && !json.Valid(in) {
					t.Fatalf("invalid JSON accepted: %q", in)
				}
			}()
		}
	}
	var tx model.JWSTransactionDecodedPayload
	if err := tx.UnmarshalJSON([]byte(`{"transactionId":"1\u00e9\ud83d\ude00","price":10,"type":"Consumable","signedDate":1.7e12}`)); err != nil ||
		*tx.TransactionID != "1é😀" || *tx.Price != 10 || *tx.Type != model.ProductTypeConsumable || *tx.SignedDate != 1700000000000 {
		t.Fatalf("%v %+v", err, tx)
	}
	_ = reflect.DeepEqual
}
