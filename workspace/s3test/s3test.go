// Package s3test serves an S3-compatible bucket in process for tests (gofakes3 with its in-memory
// backend: the real S3 wire format, conditional writes included, without Docker or network).
package s3test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/lucy-agent/lucy/workspace"
)

// Bucket is the bucket Server creates.
const Bucket = "lucy-test"

// Server starts a fake S3 with one empty bucket, Bucket, that stops with the test, and returns its
// endpoint URL.
func Server(tb testing.TB) string {
	tb.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket(Bucket); err != nil {
		tb.Fatal(err)
	}
	fake := gofakes3.New(backend, gofakes3.WithLogger(gofakes3.DiscardLog())).Server()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// For an empty body minio-go's request goes out chunked, without a Content-Length, which
		// S3 accepts and gofakes3 refuses (MissingContentLength): an empty file is a file Lucy
		// writes. Give gofakes3 the length.
		if r.Method == http.MethodPut && r.ContentLength < 0 {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.Body, r.ContentLength, r.TransferEncoding = io.NopCloser(bytes.NewReader(body)), int64(len(body)), nil
			r.Header.Set("Content-Length", strconv.Itoa(len(body)))
		}
		fake.ServeHTTP(w, r)
	}))
	tb.Cleanup(ts.Close)
	return ts.URL
}

// Store returns a store on the bucket at endpoint under prefix; several stores on one endpoint are
// several workers sharing the bucket.
func Store(tb testing.TB, endpoint, prefix string) *workspace.S3 {
	tb.Helper()
	s, err := workspace.NewS3(workspace.S3Config{
		Bucket: Bucket, Prefix: prefix, Endpoint: endpoint, Region: "us-east-1", AccessKey: "test", SecretKey: "test-secret",
	})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}
