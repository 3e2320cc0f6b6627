package tools

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Helpers for the text that tools show people and guard approvals with; several domains use them.

// MrkdwnEscape escapes the three characters Slack's mrkdwn gives a meaning to in any text: "<" starts
// a mention (<!channel>) or a link. Approval prompts quote paths, names and URLs with it.
func MrkdwnEscape(s string) string { return mrkdwnEscaper.Replace(s) }

var mrkdwnEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// TextHash is the Guard (ApprovalNeed.Guard) of a text read whole: "sha256:<hex>".
func TextHash(s string) string {
	h := sha256.New()
	io.WriteString(h, s)
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// PartsHash is the Guard of a prompt made of several parts (its summary, details and what else
// decides what the approved call does): each part hashed with its length before it, so that no two
// different lists of parts hash alike.
func PartsHash(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		io.WriteString(h, strconv.Itoa(len(p))+":")
		io.WriteString(h, p)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// ContentHash is TextHash of bytes: the Guard of a file's whole content.
func ContentHash(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// CollapseSpace turns every run of white space into one space (keeping one at either end): the text
// of a page as it reads, and an edit's text compared with a file's while ignoring how it is spaced.
func CollapseSpace(s string) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		if r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f' || r == '\u00a0' {
			space = true
			continue
		}
		if space {
			b.WriteByte(' ') // a leading space too: it separates this text from what precedes it
		}
		space = false
		b.WriteRune(r)
	}
	if space && b.Len() > 0 {
		b.WriteByte(' ')
	}
	return b.String()
}

// ByteSize is a size in bytes as people read it: "3.2 MB", "14.0 KB", "512 bytes".
func ByteSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
