//go:build !unix

package memory

// lockFile is a no-op where flock is not available: the conditional writes still catch most
// races between two processes on one local folder, and a cluster's S3 store needs no lock.
func lockFile(string) (func(), error) { return func() {}, nil }
