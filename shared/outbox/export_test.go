package outbox

import "time"

// SetHoldFor has d hold DispatchHeld's events for h instead of holdFor.
func SetHoldFor(d *Dispatcher, h time.Duration) { d.holdFor = h }
