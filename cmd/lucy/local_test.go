package main

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/localslack"
)

func startLocal(t *testing.T, dataDir string) *localWorkspace {
	t.Helper()
	lw, err := startLocalWorkspace(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lw.Close)
	return lw
}

// The local workspace listens on loopback only, with a token made at start that only the file in
// the data directory tells, and refuses any other token (the old fixed one included).
func TestLocalWorkspaceLoopbackAndToken(t *testing.T) {
	dir := t.TempDir()
	// A file left by an earlier run, readable by anyone: it is replaced, never reused.
	stale := filepath.Join(dir, localWorkspaceFile)
	if err := os.WriteFile(stale, []byte(`{"url":"http://127.0.0.1:1/api/","token":"xoxb-local"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	lw := startLocal(t, dir)

	info, err := readLocalWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	if info != lw.info {
		t.Errorf("file says %+v, the workspace is %+v", info, lw.info)
	}
	st, err := os.Stat(stale)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600: it holds the token", localWorkspaceFile, st.Mode().Perm())
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) != 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
	if !strings.HasPrefix(info.Token, "xoxb-local-") || len(info.Token) < len("xoxb-local-")+20 {
		t.Errorf("token %q is not xoxb-local- and a random part", info.Token)
	}

	u, err := url.Parse(info.URL)
	if err != nil {
		t.Fatal(err)
	}
	ap, err := netip.ParseAddrPort(u.Host)
	if err != nil || !ap.Addr().IsLoopback() || u.Path != "/api/" {
		t.Fatalf("URL %s is not a loopback address with /api/", info.URL)
	}
	// Nothing answers on the same port on the other addresses of this machine.
	addrs, _ := net.InterfaceAddrs()
	tried := 0
	for _, a := range addrs {
		ipnet, ok := a.(*net.IPNet)
		if !ok || ipnet.IP.IsLoopback() {
			continue
		}
		ip, _ := netip.AddrFromSlice(ipnet.IP)
		if ip.Is6() && ip.IsLinkLocalUnicast() {
			continue // needs a zone; not reachable from elsewhere without one anyway
		}
		tried++
		target := netip.AddrPortFrom(ip.Unmap(), ap.Port()).String()
		if c, err := net.DialTimeout("tcp", target, 2*time.Second); err == nil {
			c.Close()
			t.Errorf("the local workspace answers on %s, not only on loopback", target)
		}
	}
	if tried == 0 {
		t.Log("no non-loopback address on this machine: only the listen address was checked")
	}

	ctx := context.Background()
	if _, err := slack.New(info.Token, slack.OptionAPIURL(info.URL)).AuthTestContext(ctx); err != nil {
		t.Errorf("auth.test with the token from the file: %v", err)
	}
	for _, tok := range []string{localslack.DefaultToken, "xoxb-local-" + strings.Repeat("A", 26), ""} {
		_, err := slack.New(tok, slack.OptionAPIURL(info.URL)).AuthTestContext(ctx)
		var se slack.SlackErrorResponse
		if !errors.As(err, &se) || (se.Err != "invalid_auth" && se.Err != "not_authed") {
			t.Errorf("auth.test with token %q: err = %v, want it refused", tok, err)
		}
	}

	// Each start makes a new token.
	other := startLocal(t, t.TempDir())
	if other.info.Token == lw.info.Token {
		t.Errorf("two starts share the token %q", lw.info.Token)
	}
}

// Close removes the file, unless another `lucy dev` on the same data directory has replaced it.
func TestLocalWorkspaceCloseRemovesOnlyItsFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, localWorkspaceFile)
	first, err := startLocalWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	first.Close()
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after Close the file is still there (err %v)", err)
	}

	older, err := startLocalWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	newer := startLocal(t, dir)
	older.Close()
	info, err := readLocalWorkspace(dir)
	if err != nil || info != newer.info {
		t.Errorf("closing the older workspace removed or changed the newer one's file: %+v, %v", info, err)
	}
}

func TestReadLocalWorkspaceErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := readLocalWorkspace(dir); err == nil || !strings.Contains(err.Error(), "start `lucy dev` first, with the same LUCY_DATA_DIR") {
		t.Errorf("missing file: err = %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, localWorkspaceFile), []byte(`{"url":""}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readLocalWorkspace(dir); err == nil || !strings.Contains(err.Error(), "restart `lucy dev`") {
		t.Errorf("damaged file: err = %v", err)
	}
}

// A terminal conversation keeps its history across a restart of `lucy dev`: the second local
// workspace on the same data directory (a new port, a new token) answers conversations.replies for a
// thread of the first.
func TestLocalWorkspaceKeepsThreadsAcrossRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	first, err := startLocalWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	api := slack.New(first.info.Token, slack.OptionAPIURL(first.info.URL))
	_, root, err := api.PostMessageContext(ctx, "DLOCAL", slack.MsgOptionText("what is 2+2?", false))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := api.PostMessageContext(ctx, "DLOCAL", slack.MsgOptionText("4", false), slack.MsgOptionTS(root)); err != nil {
		t.Fatal(err)
	}
	first.Close()

	second := startLocal(t, dir)
	api = slack.New(second.info.Token, slack.OptionAPIURL(second.info.URL))
	msgs, _, _, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: "DLOCAL", Timestamp: root})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || msgs[0].Text != "what is 2+2?" || msgs[1].Text != "4" {
		t.Fatalf("thread after restart: %+v", msgs)
	}
	if st, err := os.Stat(filepath.Join(dir, localJournalFile)); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("journal %s: %v (mode 0600 wanted: it holds people's conversations)", localJournalFile, err)
	}
}
