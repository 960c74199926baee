package activity

// BeginCancelable is Begin for an operation that Kill can stop: cancel
// ends the context the operation runs under (Kill passes it a nil cause).
// It takes the cause func as the server made it, so a command need not
// wrap it in a closure of its own.
func (r *Registry) BeginCancelable(op Op, cancel func(cause error)) int64 {
	op.cancel = cancel
	return r.Begin(op)
}

// Kill stops the operation with the given ID, as killOp does, and reports
// whether there was such an operation that can be stopped.
func (r *Registry) Kill(id int64) bool {
	r.mu.Lock()
	var cancel func(cause error)
	if op := r.ops[id]; op != nil {
		cancel = op.cancel // under mu: once it is released the entry may be reused
	}
	r.mu.Unlock()
	if cancel == nil {
		return false
	}
	cancel(nil)
	return true
}
