package localslack

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Sign signs req, whose body is body, as Slack signs the requests it sends an app (the Events API,
// interactivity): X-Slack-Request-Timestamp at, and X-Slack-Signature the v0 HMAC-SHA256 of
// "v0:<timestamp>:<body>" with the app's signing secret.
func Sign(req *http.Request, body []byte, secret string, at time.Time) {
	ts := strconv.FormatInt(at.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "v0:%s:%s", ts, body)
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
}
