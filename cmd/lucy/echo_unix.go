//go:build linux || darwin || freebsd || netbsd || openbsd

package main

import (
	"os"

	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// terminalEcho returns the terminal's echo switch when stdin is a terminal (nil otherwise): the
// terminal conversation reads a key on its one reader of stdin, so it cannot call
// term.ReadPassword (a second reader would race the first for the line); it turns the echo off
// around that line instead, which is what ReadPassword does.
func terminalEcho(stdin any) func(on bool) {
	f, ok := stdin.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	fd := int(f.Fd())
	return func(on bool) {
		t, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
		if err != nil {
			return
		}
		if on {
			t.Lflag |= unix.ECHO
		} else {
			t.Lflag &^= unix.ECHO
		}
		_ = unix.IoctlSetTermios(fd, ioctlSetTermios, t)
	}
}
