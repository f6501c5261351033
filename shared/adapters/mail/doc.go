// Package mail is the SMTP side of agents' email inboxes (package email): Server is the
// listener that takes mail for the agents' addresses at the deployment's mail domain and hands
// each message, read from its MIME form, to the inboxes (email.Mailboxes); Relay sends the
// agents' answers through an SMTP relay (email.Sender). NewText takes the new part of a
// reply's text, above the quoted earlier message. Package mailtest is a local SMTP server for
// the tests of packages that send mail.
//
// The listener asks for no AUTH and offers no TLS: it sits behind the deployment's inbound
// relay (which checks SPF, DKIM and DMARC and says so in Authentication-Results) and only
// takes mail for its own domain's known addresses, so it relays nothing.
package mail
