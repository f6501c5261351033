package stats

import (
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// Intervals a series may be bucketed by.
const (
	Hour = "hour"
	Day  = "day"
	Week = "week"
)

// DefaultSpan is the window when from is not given: the 30 days before to.
const DefaultSpan = 30 * 24 * time.Hour

// MaxBuckets bounds a series, so that a call's answer stays small.
const MaxBuckets = 1000

// Window is the time the statistics cover, [From, To), and the buckets of their series
// (Interval "" for none).
type Window struct {
	From     time.Time `json:"from"`
	To       time.Time `json:"to"`
	Interval string    `json:"interval,omitempty"`
}

// ParseWindow reads from and to (RFC 3339; to defaults to now, from to DefaultSpan before to)
// and interval (hour, day, week or empty); an invalid one is Invalid naming its field.
func ParseWindow(from, to, interval string, now time.Time) (Window, error) {
	w := Window{To: now.UTC(), Interval: strings.ToLower(strings.TrimSpace(interval))}
	var err error
	if v := strings.TrimSpace(to); v != "" {
		if w.To, err = time.Parse(time.RFC3339Nano, v); err != nil {
			return Window{}, apperr.Invalidf("to", "must be a date-time (RFC 3339)")
		}
	}
	w.From = w.To.Add(-DefaultSpan)
	if v := strings.TrimSpace(from); v != "" {
		if w.From, err = time.Parse(time.RFC3339Nano, v); err != nil {
			return Window{}, apperr.Invalidf("from", "must be a date-time (RFC 3339)")
		}
	}
	w.From, w.To = w.From.UTC(), w.To.UTC()
	if !w.From.Before(w.To) {
		return Window{}, apperr.Invalidf("from", "must be before to")
	}
	switch w.Interval {
	case "", Hour, Day, Week:
	default:
		return Window{}, apperr.Invalidf("interval", "must be hour, day or week")
	}
	if n := len(w.starts()); n > MaxBuckets {
		return Window{}, apperr.Invalidf("interval", "gives %d buckets from from to to, more than %d", n, MaxBuckets)
	}
	return w, nil
}

// start is the start of the bucket holding t: its hour, its day or its week (from Monday), UTC.
func (w Window) start(t time.Time) time.Time {
	t = t.UTC()
	switch w.Interval {
	case Hour:
		return t.Truncate(time.Hour)
	case Day:
		return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	case Week:
		d := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
		return d.AddDate(0, 0, -(int(d.Weekday())+6)%7)
	}
	return time.Time{}
}

// starts lists the starts of the buckets of the window, empty ones included (none without an
// interval); it stops counting past MaxBuckets.
func (w Window) starts() []time.Time {
	var out []time.Time
	if w.Interval == "" {
		return out
	}
	for at := w.start(w.From); at.Before(w.To) && len(out) <= MaxBuckets; at = w.next(at) {
		out = append(out, at)
	}
	return out
}

func (w Window) next(at time.Time) time.Time {
	switch w.Interval {
	case Hour:
		return at.Add(time.Hour)
	case Day:
		return at.AddDate(0, 0, 1)
	}
	return at.AddDate(0, 0, 7)
}

// hours are the whole hours w overlaps: from the start of the hour holding From to the end of
// the one holding the last instant before To.
func (w Window) hours() (from, to time.Time) {
	from, to = w.From.Truncate(time.Hour), w.To.Truncate(time.Hour)
	if to.Before(w.To) {
		to = to.Add(time.Hour)
	}
	return from, to
}
