package tools

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
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

// ContentHash is TextHash of bytes: the Guard of a file's whole content.
func ContentHash(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}
