package channels_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/channels"
)

// Split cuts at the last paragraph break, else line break, else space within the limit, else
// anywhere, and counts characters, not bytes.
func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		limit      int
		want       []string
	}{
		{"Fits", "one two", 10, []string{"one two"}},
		{"Empty", "", 10, []string{""}},
		{"AtAParagraph", "aaaa bbbb\n\ncccc", 12, []string{"aaaa bbbb", "cccc"}},
		{"AtALine", "aaaa\nbbbb cccc", 12, []string{"aaaa", "bbbb cccc"}},
		{"AtASpace", "aaaa bbbb cccc", 10, []string{"aaaa bbbb", "cccc"}},
		{"Anywhere", strings.Repeat("x", 25), 10, []string{strings.Repeat("x", 10), strings.Repeat("x", 10), strings.Repeat("x", 5)}},
		{"Characters", strings.Repeat("é", 12), 10, []string{strings.Repeat("é", 10), "éé"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := channels.Split(tc.text, tc.limit)
			if strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
				t.Fatalf("Split(%q, %d) = %q, want %q", tc.text, tc.limit, got, tc.want)
			}
		})
	}
}

// A 429 or 5xx answer asks to be called again after its Retry-After, in seconds or as a date;
// other answers do not.
func TestRetryAfter(t *testing.T) {
	at := time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat)
	for _, tc := range []struct {
		name   string
		status int
		header string
		later  bool
		after  time.Duration
	}{
		{"TooManyRequests", 429, "7", true, 7 * time.Second},
		{"Unavailable", 503, "", true, 0},
		{"ADate", 503, at, true, 30 * time.Second},
		{"BadRequest", 400, "7", false, 0},
		{"Unauthorized", 401, "", false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := &http.Response{StatusCode: tc.status, Header: http.Header{}}
			if tc.header != "" {
				resp.Header.Set("Retry-After", tc.header)
			}
			err := channels.RetryAfter(resp, nil)
			after, later := channels.IsRetryLater(err)
			if later != tc.later || after > tc.after || after < tc.after-2*time.Second {
				t.Fatalf("RetryAfter(%d, %q) = %v, %v; want %v, %v", tc.status, tc.header, after, later, tc.after, tc.later)
			}
		})
	}
}
