//go:build !unix

package devserver

// lockDataDir is a no-op where flock is not available; the port checks still
// catch the common case of a second "lucy dev" with the same settings.
func lockDataDir(string) (release func(), err error) { return func() {}, nil }
