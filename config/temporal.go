package config

import (
	"crypto/tls"
	"fmt"

	"go.temporal.io/sdk/client"
)

// TemporalClientOptions returns how every Lucy process reaches Temporal: address, namespace and, for
// Temporal Cloud or a self-hosted server with mTLS, credentials and TLS. The caller adds its logger
// and data converter. It lives here rather than in cmd/lucy so that the config tests cover the
// Temporal Cloud settings end to end (variables in, client options out).
//
//   - TEMPORAL_API_KEY: an API key sent as a bearer token, over TLS (Temporal Cloud refuses API keys
//     in clear text), verified against the system's root certificates.
//   - TEMPORAL_TLS_CERT + TEMPORAL_TLS_KEY: paths to a PEM client certificate and key (mTLS). The key
//     pair is read here, at start, so a wrong path fails with one line instead of at the first dial.
//
// Both may be set; then the key authenticates and the certificate is presented too.
func (c *Config) TemporalClientOptions() (client.Options, error) {
	opts := client.Options{HostPort: c.TemporalAddress, Namespace: c.TemporalNamespace}
	if c.TemporalAPIKey != "" {
		opts.Credentials = client.NewAPIKeyStaticCredentials(c.TemporalAPIKey)
		opts.ConnectionOptions.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if c.TemporalTLSCert != "" {
		cert, err := tls.LoadX509KeyPair(c.TemporalTLSCert, c.TemporalTLSKey)
		if err != nil {
			return client.Options{}, fmt.Errorf("TEMPORAL_TLS_CERT/TEMPORAL_TLS_KEY: cannot load the client certificate and key (PEM files): %w", err)
		}
		opts.ConnectionOptions.TLS = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	}
	return opts, nil
}
