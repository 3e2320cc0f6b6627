package slackwire

import (
	"errors"
	"strings"
)

// ErrBadTS is returned for text that is not a Slack timestamp.
var ErrBadTS = errors.New("not a Slack timestamp")

// maxSecondsDigits bounds the seconds so that microseconds fit an int64 (Slack's are 10 digits).
const maxSecondsDigits = 12

// ParseTS turns a Slack timestamp ("1700000000.000100") into microseconds since the epoch, so that
// timestamps compare as integers. The fraction is microseconds padded on the right ("1.5" is
// 1.500000), which is why comparing the fraction's digits as a number is wrong. Seconds alone
// ("1700000000", as oldest and latest may be given) are accepted; anything else (a sign, spaces,
// an empty part, more than 6 fraction digits) is ErrBadTS.
func ParseTS(ts string) (int64, error) {
	sec, frac, dot := strings.Cut(ts, ".")
	if sec == "" || len(sec) > maxSecondsDigits || (dot && (frac == "" || len(frac) > 6)) {
		return 0, ErrBadTS
	}
	var s, f int64
	for _, c := range []byte(sec) {
		if c < '0' || c > '9' {
			return 0, ErrBadTS
		}
		s = s*10 + int64(c-'0')
	}
	for i := range 6 {
		f *= 10
		if i < len(frac) {
			c := frac[i]
			if c < '0' || c > '9' {
				return 0, ErrBadTS
			}
			f += int64(c - '0')
		}
	}
	return s*1_000_000 + f, nil
}

// IsMessageTS reports whether ts has the shape of a message's ts: seconds, a dot and the fraction.
func IsMessageTS(ts string) bool {
	_, err := ParseTS(ts)
	return err == nil && strings.Contains(ts, ".")
}

// CompareTS orders Slack timestamps by time (-1, 0 or +1). A ts that does not parse sorts before
// every one that does, and such ts among themselves by their text, so that the order is total.
func CompareTS(a, b string) int {
	pa, errA := ParseTS(a)
	pb, errB := ParseTS(b)
	switch {
	case errA != nil && errB != nil:
		return strings.Compare(a, b)
	case errA != nil:
		return -1
	case errB != nil:
		return 1
	case pa < pb:
		return -1
	case pa > pb:
		return 1
	}
	return 0
}

// After reports whether timestamp a is later than b. It is false when either does not parse: a check
// that cannot be made must not pass (an approval click must come after its prompt).
func After(a, b string) bool {
	pa, errA := ParseTS(a)
	pb, errB := ParseTS(b)
	return errA == nil && errB == nil && pa > pb
}
