//go:build !unix

package workspace

// lockFile is a no-op where flock is not available: there a local store's conditional writes are
// atomic within one store value only (a cluster's S3 store needs no lock).
func lockFile(string) (func(), error) { return func() {}, nil }
