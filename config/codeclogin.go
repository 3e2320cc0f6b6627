package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/lucy-agent/lucy/codec"
)

// loadCodecLogin reads the codec endpoint's login and CORS origins. The endpoint decrypts every
// payload it is sent, so on any address other than loopback it must check the Web UI's login:
// `lucy worker` with LUCY_CODEC_ADDR beyond loopback and no LUCY_CODEC_OIDC_ISSUER is refused
// rather than served open.
func (c *Config) loadCodecLogin(getenv func(string) string) error {
	issuer := strings.TrimSpace(getenv("LUCY_CODEC_OIDC_ISSUER"))
	audience := strings.TrimSpace(getenv("LUCY_CODEC_OIDC_AUDIENCE"))
	switch {
	case issuer == "" && audience != "":
		return errors.New("LUCY_CODEC_OIDC_AUDIENCE is set but LUCY_CODEC_OIDC_ISSUER is not: set the issuer URL of the Web UI's login (TEMPORAL_AUTH_PROVIDER_URL)")
	case issuer != "" && audience == "":
		return errors.New("LUCY_CODEC_OIDC_ISSUER is set but LUCY_CODEC_OIDC_AUDIENCE is not: set the Web UI's OIDC client ID (TEMPORAL_AUTH_CLIENT_ID)")
	case issuer != "":
		u, err := url.Parse(issuer)
		if err != nil || u.Host == "" || (u.Scheme != "https" && !(u.Scheme == "http" && loopbackHost(u.Hostname()))) {
			return fmt.Errorf("LUCY_CODEC_OIDC_ISSUER %q is not an https URL (for example https://accounts.google.com)", issuer)
		}
		if c.CodecAddr == "" {
			return errors.New("LUCY_CODEC_OIDC_ISSUER is set but LUCY_CODEC_ADDR is not: there is no codec endpoint to protect")
		}
		c.CodecLogin = &codec.Login{Issuer: issuer, Audience: audience}
	case c.CodecAddr != "" && c.Mode == ModeWorker:
		// Only `lucy worker` serves it beyond loopback; `lucy dev` keeps its loopback endpoint
		// without login, as its Web UI has none, and checks the Host of every request instead.
		host, _, _ := net.SplitHostPort(c.CodecAddr)
		if !loopbackHost(host) {
			return fmt.Errorf("LUCY_CODEC_ADDR %q listens beyond loopback, where the codec endpoint would decrypt payloads for anyone who reaches it: set LUCY_CODEC_OIDC_ISSUER and LUCY_CODEC_OIDC_AUDIENCE to the Web UI's login (docs/operating.md, \"The Web UI behind login\"), or listen on 127.0.0.1", c.CodecAddr)
		}
	}
	for _, o := range strings.Split(getenv("LUCY_CODEC_ORIGINS"), ",") {
		o = strings.TrimSpace(o)
		if o == "" {
			continue
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
			return fmt.Errorf("LUCY_CODEC_ORIGINS: %q is not an origin (scheme://host[:port], for example https://temporal.example.com)", o)
		}
		c.CodecOrigins = append(c.CodecOrigins, u.Scheme+"://"+u.Host)
	}
	return nil
}
