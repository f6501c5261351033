package chats

import (
	"cmp"
	"fmt"
	"strings"
)

// WithLinks is the reply as a message of another medium shows it (a messaging platform, an
// email): its text, then the sources it cites as Markdown links.
func (r Reply) WithLinks() string {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(r.Reply))
	seen := map[string]bool{}
	for _, ref := range r.Sources {
		if ref.URL == "" || seen[ref.URL] || !(strings.HasPrefix(ref.URL, "http://") || strings.HasPrefix(ref.URL, "https://")) {
			continue
		}
		if len(seen) == 0 {
			b.WriteString("\n\nSources:")
		}
		seen[ref.URL] = true
		fmt.Fprintf(&b, "\n- [%s](%s)", strings.NewReplacer("[", "(", "]", ")").Replace(cmp.Or(strings.TrimSpace(ref.Title), ref.URL)), ref.URL)
	}
	return b.String()
}
