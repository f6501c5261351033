package mail_test

import (
	"testing"

	"github.com/agentplane/agentplane/shared/adapters/mail"
)

func TestNewText(t *testing.T) {
	cases := []struct {
		name, text, want string
	}{
		{"Gmail", `Thanks, that fixed it!

Zoë

On Tue, 24 Nov 2026 at 10:15, Support Agent <support@mail.example.com> wrote:

> Hello Zoë,
>
> try turning it off and on again.
>
`, "Thanks, that fixed it!\n\nZoë"},
		{"GmailWrappedAttribution", `Yes please, Thursday works.

On Tue, Nov 24, 2026 at 10:15 AM Support Agent <
support@mail.example.com> wrote:

> Shall we meet on Thursday?
`, "Yes please, Thursday works."},
		{"AppleMail", "Sounds good.\r\n\r\nSent from my iPhone\r\n\r\n> On 24 Nov 2026, at 10:15, Support Agent <support@mail.example.com> wrote:\r\n> \r\n> Your order has shipped.\r\n", "Sounds good.\n\nSent from my iPhone"},
		{"AppleMailDesktop", `Perfect, thank you.

> On 24. Nov 2026, at 10:15, Support Agent <support@mail.example.com> wrote:
>
> Your order has shipped.
`, "Perfect, thank you."},
		{"OutlookOriginalMessage", `Please cancel my subscription.

Regards,
Bob

-----Original Message-----
From: Support Agent <support@mail.example.com>
Sent: Tuesday, November 24, 2026 10:15 AM
To: Bob <bob@example.org>
Subject: Your subscription

Your subscription renews tomorrow.
`, "Please cancel my subscription.\n\nRegards,\nBob"},
		{"OutlookHeaderBlock", `I still have the problem.

Bob Smith | Example Corp

________________________________
From: Support Agent <support@mail.example.com>
Sent: Tuesday, 24 November 2026 10:15
To: Bob Smith <bob@example.org>
Subject: RE: Printer

Did the update help?
`, "I still have the problem.\n\nBob Smith | Example Corp"},
		{"OutlookBoldHeaderBlock", `Works now.

*From:* Support Agent <support@mail.example.com>
*Sent:* Tuesday, November 24, 2026 10:15 AM
*Subject:* Printer
`, "Works now."},
		{"German", `Danke!

Am Di., 24. Nov. 2026 um 10:15 Uhr schrieb Support Agent <support@mail.example.com>:
> Hallo
`, "Danke!"},
		{"French", "Merci beaucoup.\n\nLe mar. 24 nov. 2026 à 10:15, Support Agent <support@mail.example.com> a écrit :\n> Bonjour\n", "Merci beaucoup."},
		{"OnWithoutDateIsText", "On second thought, my colleague wrote:\nplease call me.\n", "On second thought, my colleague wrote:\nplease call me."},
		{"NoQuote", "Hello,\n\nI have a question about my invoice.\n", "Hello,\n\nI have a question about my invoice."},
		{"FromLineInTheText", "From: my experience, restarting helps.\nThanks\n", "From: my experience, restarting helps.\nThanks"},
		{"InlineReplyKeepsAll", "> Which plan are you on?\nThe pro plan.\n", "> Which plan are you on?\nThe pro plan."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := mail.NewText(tc.text); got != tc.want {
				t.Errorf("NewText =\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}
