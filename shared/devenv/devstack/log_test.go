package devstack

import (
	"bytes"
	"log/slog"
	"testing"
)

// counted is a log value that counts how often a handler formats it.
type counted struct{ n *int }

func (c counted) LogValue() slog.Value {
	*c.n++
	return slog.StringValue("doc")
}

// The embedded store's logger logs what a plain one does, attributes and groups in place, but
// formats the attributes added with With only for a record it logs.
func TestLazyAttrs(t *testing.T) {
	var plain, lazy bytes.Buffer
	opts := &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}
	for _, l := range []*slog.Logger{
		slog.New(slog.NewTextHandler(&plain, opts)),
		slog.New(lazyAttrs{Handler: slog.NewTextHandler(&lazy, opts)}),
	} {
		l.With("a", 1).WithGroup("g").With("b", 2).Info("m", "c", 3)
		l.With("d", 4).Warn("n")
	}
	if plain.String() != lazy.String() {
		t.Fatalf("logged\n%s\nwant\n%s", lazy.String(), plain.String())
	}
	n := 0
	l := slog.New(lazyAttrs{Handler: slog.NewTextHandler(&lazy, opts)})
	l.With("args", counted{&n}).Debug("not logged")
	if n != 0 {
		t.Fatalf("an attribute of a record not logged was formatted %d times", n)
	}
	l.With("args", counted{&n}).Info("logged")
	if n != 1 {
		t.Fatalf("an attribute of a logged record was formatted %d times", n)
	}
}
