package appstoreserver

/*
#cgo pkg-config: appstoreserver
#include <stdlib.h>
#include <stdint.h>
#include <appstoreserver.h>
appstore_status appstore_go_transport_new(void *user_data, appstore_transport **out, appstore_error **err);
*/
import "C"

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/cgo"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"appstoreserver.dev/appstoreserver/internal/capi"
)

// transportBridge is the host transport of online checks (OCSP): the library calls it on the thread of the verify
// call, and it does the exchange with net/http.
type transportBridge struct {
	transport capi.Transport
	slot      unsafe.Pointer // C memory holding the cgo.Handle of the bridge (the callback's user data)
	handle    cgo.Handle
	client    *http.Client
	refs      atomic.Int32 // the Go owners of C objects that may call the transport (a verifier, ledgers made with it)
}

func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

func newTransportBridge(client *http.Client) (*transportBridge, error) {
	c := &http.Client{}
	if client != nil {
		copied := *client
		c = &copied
	}
	c.CheckRedirect = noRedirects // a redirect is reported as it is, never followed
	b := &transportBridge{client: c}
	b.refs.Store(1)
	b.handle = cgo.NewHandle(b)
	b.slot = C.malloc(C.size_t(unsafe.Sizeof(C.uintptr_t(0))))
	*(*C.uintptr_t)(b.slot) = C.uintptr_t(b.handle)
	var t *C.appstore_transport
	var cerr *C.appstore_error
	if st := C.appstore_go_transport_new(b.slot, &t, &cerr); st != 0 {
		b.close()
		return nil, capi.ReadError(int32(st), unsafe.Pointer(cerr))
	}
	b.transport = capi.Transport(unsafe.Pointer(t))
	return b, nil
}

// freeTransport drops the bridge's own reference to the transport handle (options and verifiers keep theirs).
func (b *transportBridge) freeTransport() {
	if b.transport != nil {
		capi.TransportFree(b.transport)
		b.transport = nil
	}
}

func (b *transportBridge) retain() { b.refs.Add(1) }

// release drops one owner; the last one frees the user data (nothing can call the transport any more).
func (b *transportBridge) release() {
	if b.refs.Add(-1) == 0 {
		b.close()
	}
}

// close frees the user data.
func (b *transportBridge) close() {
	b.freeTransport()
	if b.slot != nil {
		C.free(b.slot)
		b.slot = nil
		b.handle.Delete()
	}
}

// The context of a call in progress, by the OS thread it runs on: the library calls the transport on the thread
// that called it, so the callback finds the caller's context here.
var callContexts sync.Map // int -> context.Context

func withCallContext(ctx context.Context, fn func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := syscall.Gettid()
	callContexts.Store(tid, ctx)
	defer callContexts.Delete(tid)
	return fn()
}

//export appstoreGoTransport
func appstoreGoTransport(userData unsafe.Pointer, method, url, headers *C.char, headersLen C.size_t, body *C.uint8_t,
	bodyLen C.size_t, timeoutMs C.uint32_t, response *C.appstore_http_response) (result C.int32_t) {
	defer func() {
		if recover() != nil { // never unwind through C
			result = C.int32_t(capi.TransportResultFailed)
		}
	}()
	b := cgo.Handle(*(*C.uintptr_t)(userData)).Value().(*transportBridge)
	ctx := context.Background()
	if c, ok := callContexts.Load(syscall.Gettid()); ok {
		ctx = c.(context.Context)
	}
	var reqBody []byte
	if bodyLen > 0 {
		reqBody = C.GoBytes(unsafe.Pointer(body), C.int(bodyLen))
	}
	hdr := C.GoStringN(headers, C.int(headersLen))
	return C.int32_t(exchange(ctx, b.client, C.GoString(method), C.GoString(url), hdr, reqBody,
		time.Duration(timeoutMs)*time.Millisecond, capi.HttpResponse(unsafe.Pointer(response))))
}

// parseHeaderLines reads "Name: value\r\n" lines.
func parseHeaderLines(text string) [][2]string {
	var out [][2]string
	for _, line := range strings.Split(text, "\r\n") {
		if i := strings.IndexByte(line, ':'); i > 0 {
			out = append(out, [2]string{line[:i], strings.TrimSpace(line[i+1:])})
		}
	}
	return out
}

// exchange does one HTTP exchange within timeout and reports it through response; the body stops at the
// exchange's limit.
func exchange(ctx context.Context, client *http.Client, method, url, headers string, body []byte, timeout time.Duration,
	response capi.HttpResponse) int32 {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return capi.TransportResultFailed
	}
	for _, h := range parseHeaderLines(headers) {
		req.Header.Add(h[0], h[1])
	}
	resp, err := client.Do(req)
	if err != nil {
		return transportResult(err)
	}
	defer resp.Body.Close()
	if capi.HttpResponseSetStatus(response, int32(resp.StatusCode)) != nil {
		return capi.TransportResultFailed
	}
	for name, values := range resp.Header {
		for _, v := range values {
			if capi.HttpResponseAddHeader(response, name, v) != nil {
				return capi.TransportResultFailed
			}
		}
	}
	limit := int64(capi.HttpResponseBodyLimit(response))
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return transportResult(err)
	}
	if int64(len(data)) > limit {
		return capi.TransportResultFailed
	}
	if len(data) > 0 && capi.HttpResponseAppendBody(response, data) != nil {
		return capi.TransportResultFailed
	}
	return capi.TransportResultOk
}

func transportResult(err error) int32 {
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return capi.TransportResultTimeout
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return capi.TransportResultUnreachable
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return capi.TransportResultUnreachable
	}
	return capi.TransportResultFailed
}
