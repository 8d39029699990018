package driver

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine (an executor worker,
// a request's driver) is still running when they end.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
