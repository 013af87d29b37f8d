package appstoreserver

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"appstoreserver.dev/appstoreserver/internal/capi"
)

// ErrClosed is returned by a call on a handle after its Close.
var ErrClosed = errors.New("appstoreserver: use of a closed handle")

// Error is a failure that is neither a verification nor an App Store Server API call: a bad argument, a
// configuration the library refuses, a key, a receipt, the ledger's storage.
type Error struct {
	Status  VerificationStatus // the library's status (INVALID_ARGUMENT, CONFIGURATION_ERROR, INVALID_KEY, ...)
	Reason  Reason             // why, finer (ReasonKeyNotPem, ReasonStorageFailed, ...)
	Message string             // what failed, in words
}

func (e *Error) Error() string {
	return fmt.Sprintf("appstoreserver: %s (%s): %s", e.Status, e.Reason, e.Message)
}

// Retryable reports whether trying again later may succeed (e.g. the ledger's database was unavailable).
func (e *Error) Retryable() bool { return e.Reason.Retryable() }

// VerificationError is signed data that did not verify: Apple's VerificationStatus, the reason and what failed.
type VerificationError struct {
	Status  VerificationStatus // Apple's status: VerificationStatusVerificationFailure, ...InvalidAppIdentifier, ...
	Reason  Reason             // why: ReasonBadSignature, ReasonExpired, ReasonWrongBundle, ...
	Message string             // what failed, in words
}

func (e *VerificationError) Error() string {
	return fmt.Sprintf("Verification failed with status %s (%s): %s", e.Status, e.Reason, e.Message)
}

// Retryable reports whether the failure says nothing about the data (online checks could not reach a responder):
// verify again later.
func (e *VerificationError) Retryable() bool {
	return e.Status == VerificationStatusRetryableVerificationFailure
}

// APIError is a failed App Store Server API call: Apple's answer (HTTP status, error code and message,
// Retry-After), or no answer (a transport failure), or the client's own rate limiter refusing to send.
type APIError struct {
	Status         VerificationStatus // API_ERROR, TRANSPORT_ERROR, INVALID_RESPONSE, RATE_LIMITED, ...
	Reason         Reason
	Message        string
	HTTPStatusCode int         // 0 when there was no answer
	RawAPIError    int64       // Apple's errorCode (0 when none), also when this library does not know it
	APIErrorName   string      // the known code's name ("transactionIdNotFound"), "" otherwise
	ErrorMessage   string      // Apple's errorMessage
	RetryAfter     int64       // Retry-After in seconds from the answer (-1 when absent)
	RetryAt        time.Time   // Retry-After (or the rate limiter's next slot) as a time; zero when absent
	Header         http.Header // the answer's headers, when there was one
}

func (e *APIError) Error() string {
	if e.HTTPStatusCode != 0 {
		return fmt.Sprintf("appstoreserver: API call failed with HTTP %d, errorCode %d: %s", e.HTTPStatusCode, e.RawAPIError, e.Message)
	}
	return fmt.Sprintf("appstoreserver: API call failed, %s (%s): %s", e.Status, e.Reason, e.Message)
}

// APIError is Apple's errorCode as an App Store Server API code.
func (e *APIError) APIError() APIErrorCode { return APIErrorCode(e.RawAPIError) }

// Retryable reports whether Apple (or the rate limiter) says to try again later.
func (e *APIError) Retryable() bool {
	return e.Reason.Retryable() || APIErrorCode(e.RawAPIError).Retryable() ||
		AdvancedCommerceAPIErrorCode(e.RawAPIError).Retryable()
}

func plainError(err error) error {
	var ce *capi.Error
	if !errors.As(err, &ce) {
		return err
	}
	return &Error{Status: VerificationStatus(ce.Status), Reason: Reason(ce.Reason), Message: ce.Message}
}

func verificationError(err error) error {
	var ce *capi.Error
	if !errors.As(err, &ce) {
		return err
	}
	st := VerificationStatus(ce.Status)
	switch st {
	case VerificationStatusInvalidArgument, VerificationStatusConfigurationError, VerificationStatusInternalError:
		return &Error{Status: st, Reason: Reason(ce.Reason), Message: ce.Message}
	}
	return &VerificationError{Status: st, Reason: Reason(ce.Reason), Message: ce.Message}
}

func apiError(err error) error {
	var ce *capi.Error
	if !errors.As(err, &ce) {
		return err
	}
	st := VerificationStatus(ce.Status)
	if st == VerificationStatusInvalidArgument || st == VerificationStatusConfigurationError {
		return &Error{Status: st, Reason: Reason(ce.Reason), Message: ce.Message}
	}
	e := &APIError{Status: st, Reason: Reason(ce.Reason), Message: ce.Message, HTTPStatusCode: int(ce.HTTPStatus),
		RawAPIError: ce.APIErrorCode, APIErrorName: ce.APIErrorName, ErrorMessage: ce.APIErrorMessage,
		RetryAfter: ce.RetryAfter}
	if ce.RetryAtMs >= 0 {
		e.RetryAt = time.UnixMilli(ce.RetryAtMs)
	}
	if len(ce.Headers) > 0 {
		e.Header = http.Header{}
		for _, h := range ce.Headers {
			e.Header.Add(h[0], h[1])
		}
	}
	return e
}

func argError(what, why string) error {
	return &Error{Status: VerificationStatusInvalidArgument, Reason: ReasonInvalidArgument, Message: what + " " + why}
}
