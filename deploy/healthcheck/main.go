// Command healthcheck asks one of lucy's HTTP endpoints whether it is healthy: `healthcheck
// http://127.0.0.1:3000/readyz` exits 0 on a 2xx answer and 1 otherwise. It exists because the
// container image is distroless (no shell, curl or wget) and a compose healthcheck runs inside the
// container; Kubernetes probes do not need it. It uses only package net so that it stays small.
package main

import (
	"bufio"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: healthcheck http://host:port/path")
		os.Exit(2)
	}
	if err := check(os.Args[1], 3*time.Second); err != nil {
		fmt.Fprintln(os.Stderr, "healthcheck:", err)
		os.Exit(1)
	}
}

// check sends one HTTP/1.0 GET and accepts a 2xx status line.
func check(raw string, timeout time.Duration) error {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return fmt.Errorf("%q is not an http:// URL", raw)
	}
	conn, err := net.DialTimeout("tcp", u.Host, timeout)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n", u.RequestURI(), u.Host); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return fmt.Errorf("no answer: %w", err)
	}
	f := strings.Fields(line)
	if len(f) < 2 || !strings.HasPrefix(f[0], "HTTP/") {
		return fmt.Errorf("not an HTTP answer: %q", strings.TrimSpace(line))
	}
	if len(f[1]) != 3 || f[1][0] != '2' {
		return fmt.Errorf("%s answered %s", raw, strings.Join(f[1:], " "))
	}
	return nil
}
