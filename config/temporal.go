package config

import (
	"crypto/tls"
	"fmt"
	"net"
	"slices"
	"strings"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"
)

// temporalVariables are the names of Temporal's standard client configuration that Lucy reads
// (go.temporal.io/sdk/contrib/envconfig, the same names as the temporal CLI and the other SDKs).
// envconfig knows a few more (TEMPORAL_CODEC_*, TEMPORAL_GRPC_META_*, the *_DATA forms of the TLS
// files): Lucy does not read them from the environment, so a deploy file cannot set them in vain
// (package deploy checks every variable against Variables); a temporal.toml profile may still
// hold them.
var temporalVariables = []string{
	"TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TEMPORAL_API_KEY", "TEMPORAL_TLS",
	"TEMPORAL_TLS_CLIENT_CERT_PATH", "TEMPORAL_TLS_CLIENT_KEY_PATH", "TEMPORAL_TLS_SERVER_CA_CERT_PATH",
	"TEMPORAL_TLS_SERVER_NAME", "TEMPORAL_PROFILE", "TEMPORAL_CONFIG_FILE",
}

// temporalAliases are the names Lucy used before it read Temporal's standard ones. They keep working
// for one release, with a deprecation line in the log.
var temporalAliases = map[string]string{
	"TEMPORAL_TLS_CERT": "TEMPORAL_TLS_CLIENT_CERT_PATH",
	"TEMPORAL_TLS_KEY":  "TEMPORAL_TLS_CLIENT_KEY_PATH",
}

// temporalEnv is envconfig's view of the environment: only temporalVariables, read through
// Load's guarded getenv, blank counting as unset (as for every other variable of Lucy's), and the
// old names standing in for the new ones they alias.
type temporalEnv struct {
	getenv func(string) string
	alias  map[string]string // new name → value given under the old name
}

func (e temporalEnv) LookupEnv(k string) (string, bool) {
	if !slices.Contains(temporalVariables, k) {
		return "", false
	}
	if v := strings.TrimSpace(e.getenv(k)); v != "" {
		return v, true
	}
	v, ok := e.alias[k]
	return v, ok
}

func (e temporalEnv) Environ() []string {
	var out []string
	for _, k := range temporalVariables {
		if v, ok := e.LookupEnv(k); ok {
			out = append(out, k+"="+v)
		}
	}
	return out
}

// loadTemporal reads how this process reaches Temporal: a temporal.toml profile, if there is one,
// then the TEMPORAL_ variables over it (envconfig's order: the environment wins).
//
// `lucy dev` reads a temporal.toml only when TEMPORAL_PROFILE or TEMPORAL_CONFIG_FILE asks for
// one: a developer's default profile (written by `temporal config set`, for another project) would
// otherwise silently replace the embedded server `lucy dev` is for.
func (c *Config) loadTemporal(mode Mode, getenv func(string) string) error {
	env := temporalEnv{getenv: getenv, alias: map[string]string{}}
	c.temporalVars = map[string]string{"cert": "TEMPORAL_TLS_CLIENT_CERT_PATH", "key": "TEMPORAL_TLS_CLIENT_KEY_PATH"}
	for _, old := range []string{"TEMPORAL_TLS_CERT", "TEMPORAL_TLS_KEY"} {
		v := strings.TrimSpace(getenv(old))
		if v == "" {
			continue
		}
		cur := temporalAliases[old]
		if nv := strings.TrimSpace(getenv(cur)); nv != "" && nv != v {
			return fmt.Errorf("%s and %s are both set, to different files: keep %s (%s is its old name)", old, cur, cur, old)
		}
		env.alias[cur] = v
		if old == "TEMPORAL_TLS_CERT" {
			c.temporalVars["cert"] = old
		} else {
			c.temporalVars["key"] = old
		}
		c.Deprecations = append(c.Deprecations, fmt.Sprintf("%s is deprecated: rename it %s (Temporal's standard name); the old name is read for one more release", old, cur))
	}
	_, explicitProfile := env.LookupEnv("TEMPORAL_PROFILE")
	_, explicitFile := env.LookupEnv("TEMPORAL_CONFIG_FILE")
	prof, err := envconfig.LoadClientConfigProfile(envconfig.LoadClientConfigProfileOptions{
		EnvLookup:   env,
		DisableFile: mode == ModeDev && !explicitProfile && !explicitFile,
	})
	if err != nil {
		file, _ := env.LookupEnv("TEMPORAL_CONFIG_FILE")
		if file == "" {
			file = envconfig.DefaultConfigFilePath()
		}
		return fmt.Errorf("the Temporal client configuration (%s, TEMPORAL_PROFILE): %v; fix the file or the profile name, or unset TEMPORAL_PROFILE to use the default profile", file, err)
	}
	c.TemporalProfile, _ = env.LookupEnv("TEMPORAL_PROFILE")
	c.TemporalAddress = prof.Address
	c.TemporalNamespace = prof.Namespace
	if c.TemporalNamespace == "" {
		c.TemporalNamespace = DefaultNamespace
	}
	c.TemporalAPIKey = prof.APIKey
	if t := prof.TLS; t != nil && !t.Disabled {
		if (t.ClientCertPath == "") != (t.ClientKeyPath == "") {
			return fmt.Errorf("%s and %s must be set together (paths to the PEM client certificate and key, for mTLS)", c.temporalVars["cert"], c.temporalVars["key"])
		}
	}
	c.temporal = prof
	return nil
}

// TemporalTLS reports whether the connection to Temporal uses TLS (envconfig's rule: TLS settings
// turn it on unless TEMPORAL_TLS=false; an API key alone turns it on).
func (c *Config) TemporalTLS() bool {
	if t := c.temporal.TLS; t != nil {
		return !t.Disabled
	}
	return c.temporal.APIKey != ""
}

// TemporalClientOptions returns how every Lucy process reaches Temporal, from Temporal's standard
// client configuration (envconfig: TEMPORAL_ variables over a temporal.toml profile). The caller adds
// its logger and data converter. It lives here rather than in cmd/lucy so that the config tests cover
// the settings end to end (variables in, client options out).
//
//   - TEMPORAL_API_KEY: an API key sent as a bearer token, over TLS unless TEMPORAL_TLS=false (Temporal
//     Cloud refuses API keys in clear text), verified against the system's root certificates.
//   - TEMPORAL_TLS_CLIENT_CERT_PATH + _KEY_PATH: a PEM client certificate and key (mTLS).
//   - TEMPORAL_TLS_SERVER_CA_CERT_PATH, TEMPORAL_TLS_SERVER_NAME: a private CA, and the name the
//     server's certificate carries when it differs from the address's host.
//
// The files are read here, at start, so a wrong path fails with one line naming the variable
// instead of at the first dial.
func (c *Config) TemporalClientOptions() (client.Options, error) {
	opts, err := c.temporal.ToClientOptions(envconfig.ToClientOptionsRequest{})
	if err != nil {
		return client.Options{}, fmt.Errorf("the Temporal TLS settings (%s, %s, TEMPORAL_TLS_SERVER_CA_CERT_PATH, or the profile's tls section): %v",
			c.temporalVars["cert"], c.temporalVars["key"], err)
	}
	// `lucy dev` sets the address of its embedded server after Load.
	opts.HostPort, opts.Namespace = c.TemporalAddress, c.TemporalNamespace
	if t := opts.ConnectionOptions.TLS; t != nil {
		t.MinVersion = tls.VersionTLS12
	}
	if Loopback(opts.HostPort) {
		// The SDK gzips every request by default, and the server answers in kind. On loopback
		// (`lucy dev`, a worker beside its server) that saves no bandwidth and cost about 6% of the
		// whole process's CPU (BenchmarkConversationsPerSecond, profiled): turned off there.
		opts.ConnectionOptions.GrpcCompression = &client.GrpcCompressionNone{}
	}
	return opts, nil
}

// Loopback reports whether hostPort names this machine (localhost or a loopback address).
func Loopback(hostPort string) bool {
	host, _, err := net.SplitHostPort(hostPort)
	if err != nil {
		host = hostPort
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
