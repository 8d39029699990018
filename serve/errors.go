package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"google.golang.org/grpc/codes"

	"github.com/clinfer/clinfer"
)

// code is the kind of a failed request, which fixes its HTTP status, its
// gRPC code and its outcome label in the metrics.
type code int

const (
	codeInternal        code = iota // 500, INTERNAL
	codeInvalid                     // 400, INVALID_ARGUMENT: malformed request, wrong name, datatype or shape
	codeNotFound                    // 404, NOT_FOUND: unknown model or version
	codeTooLarge                    // 413, INVALID_ARGUMENT: body or tensor over the limits
	codeQueueFull                   // 429, RESOURCE_EXHAUSTED: the model's queue is full
	codeUnavailable                 // 503, UNAVAILABLE: model not ready, server draining
	codeDeadline                    // 504, DEADLINE_EXCEEDED: the inference timed out
	codeCanceled                    // 499, CANCELLED: the client went away
	codeUnauthenticated             // 401, UNAUTHENTICATED: missing or wrong bearer token
)

var codeInfo = [...]struct {
	http    int
	grpc    codes.Code
	outcome string
}{
	codeInternal:        {http.StatusInternalServerError, codes.Internal, "error"},
	codeInvalid:         {http.StatusBadRequest, codes.InvalidArgument, "invalid"},
	codeNotFound:        {http.StatusNotFound, codes.NotFound, "invalid"},
	codeTooLarge:        {http.StatusRequestEntityTooLarge, codes.InvalidArgument, "invalid"},
	codeQueueFull:       {http.StatusTooManyRequests, codes.ResourceExhausted, "rejected"},
	codeUnavailable:     {http.StatusServiceUnavailable, codes.Unavailable, "unavailable"},
	codeDeadline:        {http.StatusGatewayTimeout, codes.DeadlineExceeded, "timeout"},
	codeCanceled:        {499, codes.Canceled, "canceled"},
	codeUnauthenticated: {http.StatusUnauthorized, codes.Unauthenticated, "unauthenticated"},
}

// apiError is a failed request: its kind and the message the protocol's
// error body carries ({"error": msg} over REST, the status message over
// gRPC).
type apiError struct {
	code code
	msg  string
}

// Error is the message.
func (e *apiError) Error() string { return e.msg }

// errorf makes an apiError.
func errorf(c code, format string, args ...any) *apiError {
	return &apiError{code: c, msg: fmt.Sprintf(format, args...)}
}

// classify turns any error into an apiError: clinfer's sentinels and ctx's
// errors get their kinds, anything else is internal.
func classify(err error) *apiError {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, context.DeadlineExceeded):
		return errorf(codeDeadline, "inference timed out: %v", err)
	case errors.Is(err, context.Canceled):
		return errorf(codeCanceled, "request cancelled: %v", err)
	case errors.Is(err, clinfer.ErrInvalidArgument), errors.Is(err, clinfer.ErrNotFound), errors.Is(err, clinfer.ErrUnsupported):
		return errorf(codeInvalid, "%v", err)
	case errors.Is(err, clinfer.ErrResourceExhausted):
		return errorf(codeQueueFull, "%v", err)
	case errors.Is(err, clinfer.ErrClosed), errors.Is(err, clinfer.ErrBusy):
		return errorf(codeUnavailable, "%v", err)
	}
	return errorf(codeInternal, "%v", err)
}
