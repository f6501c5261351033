package slack

import (
	"strings"

	"github.com/agentplane/agentplane/shared/adapters/channels/markup"
)

// escaper escapes what Slack reads as markup of its own (links, mentions) in text.
var escaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// style is Slack's mrkdwn: bold *x*, italic _x_, strike ~x~, links <url|text>, list items after
// "•" or their number, a table's header bold, and &, <, > escaped so that Slack shows them.
var style = markup.Style{
	Bold: "*", Italic: "_", Strike: "~",
	Bullet: "• ", Indent: "    ",
	Checked: "☑ ", Unchecked: "☐ ",
	BoldTableHeader: true,
	Escape:          escaper.Replace,
	Link:            link,
}

// mrkdwn is Markdown written in Slack's mrkdwn.
func mrkdwn(markdown string) string {
	return markup.Render(markdown, style)
}

// urlEscaper keeps a URL from ending Slack's <url|text> early.
var urlEscaper = strings.NewReplacer("|", "%7C", ">", "%3E", "<", "%3C")

// link is Slack's <url|label>, or <url> when the label is empty or the URL itself; an e-mail
// address links with mailto:.
func link(url, label string) string {
	if !strings.Contains(url, ":") && strings.Contains(url, "@") {
		url = "mailto:" + url
	}
	url = urlEscaper.Replace(url)
	if label == "" || label == url {
		return "<" + url + ">"
	}
	return "<" + url + "|" + strings.ReplaceAll(label, "|", "¦") + ">"
}
