//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package main

// terminalEcho: elsewhere a key typed in the terminal conversation is echoed.
func terminalEcho(any) func(on bool) { return nil }
