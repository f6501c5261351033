package whatsapp

import (
	"strings"

	"github.com/agentplane/agentplane/shared/adapters/channels/markup"
)

// style is WhatsApp's own formatting: bold *b*, italic _i_, strikethrough ~s~, links
// "title (url)", lists "- " and "1. ", task items "[x] " and "[ ] ", nothing escaped.
var style = markup.Style{
	Bold: "*", Italic: "_", Strike: "~",
	Bullet:  "- ",
	Checked: "[x] ", Unchecked: "[ ] ",
	Link: titled,
}

// format turns Markdown into WhatsApp's own formatting.
func format(md string) string {
	return markup.Render(md, style)
}

// titled is a link as WhatsApp shows it: "title (url)", or the url alone when it has no title of
// its own.
func titled(url, title string) string {
	title = strings.TrimSpace(title)
	if title == "" || title == url {
		return url
	}
	return title + " (" + url + ")"
}
