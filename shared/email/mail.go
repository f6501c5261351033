// Package email is agents' email inboxes: each agent has an address at the deployment's mail
// domain whose mail it answers; mail comes in over SMTP (the listener in shared/adapters/mail),
// a message and its replies are one chat of the agent with the sender as its end user, and
// answers go out through a relay (Sender).
package email

import (
	"context"
	"time"
)

// Address is a mailbox: an address and its display name.
type Address struct {
	Name    string `json:"name" bson:"name"`
	Address string `json:"address" bson:"address"`
}

// Attachment is a file a message brought, kept while it is within the listener's size limit.
type Attachment struct {
	Filename    string `json:"filename" bson:"filename"`
	ContentType string `json:"content_type" bson:"content_type"`
	Size        int    `json:"size" bson:"size"`
	// Data is the file's content; nil when it was over the limit (Size still says how big).
	Data []byte `json:"-" bson:"data,omitempty"`
}

// Inbound is a message the SMTP listener accepted, read from its MIME form.
type Inbound struct {
	// EnvelopeFrom is the SMTP MAIL FROM: "" for a bounce (the null reverse-path).
	EnvelopeFrom string
	// Recipients are the RCPT TO addresses the listener accepted, lowercased.
	Recipients []string
	From       Address
	To, Cc     []Address
	ReplyTo    []Address
	Subject    string
	// MessageID, InReplyTo and References are message ids without their angle brackets.
	MessageID  string
	InReplyTo  string
	References []string
	Date       time.Time
	// Text is the plain text part (or, when the message has only HTML, its text); HTML is the
	// HTML part, sanitised (no scripts, styles, event handlers or remote content).
	Text, HTML  string
	Attachments []Attachment
	// AuthenticationResults is the Authentication-Results header of the relay in front, as
	// given (SPF, DKIM, DMARC verdicts); the listener checks nothing itself.
	AuthenticationResults string
	// Automatic says the message was sent by a machine (Auto-Submitted other than no,
	// Precedence bulk, junk or list, a List-Id, a mailer-daemon or postmaster sender, a null
	// envelope sender): it is filed, never answered.
	Automatic bool
	// Size is the message's size in bytes as received.
	Size int
}

// Outgoing is a message an agent (or a person for it) sends.
type Outgoing struct {
	From    Address
	To      []Address
	Subject string
	// Text and HTML are the two alternatives of the body (multipart/alternative).
	Text, HTML string
	// MessageID is the message's own id (without angle brackets); InReplyTo and References
	// thread it under the message it answers.
	MessageID  string
	InReplyTo  string
	References []string
	// Header are further header fields (Auto-Submitted: auto-replied on an agent's answers).
	Header map[string]string
}

// Sender sends mail through the relay. An error of kind apperr.Unavailable is temporary (the
// relay is down or answered 4xx: try again later); any other error is permanent (5xx).
type Sender interface {
	Send(ctx context.Context, m Outgoing) error
}

// Mailboxes is what the SMTP listener asks of the inboxes: whether an address (the local part
// at the deployment's mail domain, lowercased) is an agent's, and to keep an accepted message.
// Accepts returns an error of kind apperr.NotFound for an unknown address (refused at RCPT
// with 550) and of kind apperr.Unavailable when it cannot tell (451). Deliver keeps m before
// the listener answers 250; an error answers 451, so the sender tries again and nothing
// acknowledged is lost.
type Mailboxes interface {
	Accepts(ctx context.Context, local string) error
	Deliver(ctx context.Context, m Inbound) error
}
