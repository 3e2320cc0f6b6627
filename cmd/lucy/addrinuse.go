package main

import "syscall"

var syscallEADDRINUSE = syscall.EADDRINUSE
