package appstoreserver

import (
	"sync"
	"unsafe"
)

// handle owns one C handle: calls hold the read lock while they use it, Close takes the write lock, so a handle
// is never freed under a call running on another goroutine, and a call after Close fails with ErrClosed instead of
// touching freed memory.
type handle[T ~unsafe.Pointer] struct {
	mu   sync.RWMutex
	p    T
	free func(T)
}

func (h *handle[T]) get() (T, bool) {
	if h == nil { // a nil *SignedDataVerifier (the handle is every wrapper's first field): refused, not a panic
		var zero T
		return zero, false
	}
	h.mu.RLock()
	p := h.p
	if p == nil {
		h.mu.RUnlock()
		return p, false
	}
	return p, true
}

func (h *handle[T]) release() { h.mu.RUnlock() }

func (h *handle[T]) close() {
	if h == nil {
		return
	}
	h.mu.Lock()
	p := h.p
	h.p = nil
	h.mu.Unlock()
	if p != nil {
		h.free(p)
	}
}
