//go:build !unix

package tune

// lockFile is a no-op where there is no flock: the rename in Save still
// leaves a valid file, but two processes saving at once may drop each
// other's records.
func lockFile(string) (func(), error) { return func() {}, nil }
