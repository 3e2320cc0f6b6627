package main

import (
	"net/http"
	"time"

	"github.com/lucy-agent/lucy/localslack"
)

// serverTimeouts bound how long one connection may hold a server. Without them a client that sends
// its headers and then stalls on the body, never reads the answer, or leaves a connection idle keeps
// a goroutine and a file descriptor for as long as it likes, and a few thousand such clients exhaust
// the process.
type serverTimeouts struct {
	readHeader time.Duration // the request line and headers
	read       time.Duration // the whole request, body included
	write      time.Duration // from the end of the headers to the end of the answer: the handler's time too
	idle       time.Duration // between two requests on a kept-alive connection
}

var (
	// slackTimeouts are for LUCY_HTTP_ADDR. Slack's events and interactivity payloads are a few KiB
	// and must be answered within 3 s (the gateway gives a hand-off 2.5 s and /readyz 2 s), and
	// /healthz and /metrics are small, so a sender that needs longer is broken or hostile. Slack
	// reuses connections: 90 s idle keeps one across a workspace's usual gaps between events without
	// holding abandoned ones for long.
	slackTimeouts = serverTimeouts{readHeader: 5 * time.Second, read: 10 * time.Second, write: 15 * time.Second, idle: 90 * time.Second}
	// localTimeouts are for the local workspace, on loopback: local.wait holds a request open for up
	// to localslack.MaxWait, and tools upload generated files through it.
	localTimeouts = serverTimeouts{readHeader: 5 * time.Second, read: 60 * time.Second, write: localslack.MaxWait + 30*time.Second, idle: 2 * time.Minute}
)

// newHTTPServer is how every HTTP server of this binary is built, so that none runs without the
// timeouts.
func newHTTPServer(h http.Handler, t serverTimeouts) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: t.readHeader,
		ReadTimeout:       t.read,
		WriteTimeout:      t.write,
		IdleTimeout:       t.idle,
	}
}
