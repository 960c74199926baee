package activity

import "go.mongodb.org/mongo-driver/v2/bson"

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

// KillSessions stops, as Kill does, every operation but except (the
// killing command's own) whose command names a session match takes (by
// lsid.id), and returns how many it stopped.
func (r *Registry) KillSessions(match func(id []byte) bool, except int64) int {
	r.mu.Lock()
	var cancels []func(cause error)
	for id, op := range r.ops {
		if id != except && op.cancel != nil && opSessionMatches(op.Command, match) {
			cancels = append(cancels, op.cancel)
		}
	}
	r.mu.Unlock()
	for _, cancel := range cancels {
		cancel(nil)
	}
	return len(cancels)
}

// opSessionMatches reads the command's lsid.id and asks match about it;
// a command outside a session matches nothing.
func opSessionMatches(cmd bson.D, match func(id []byte) bool) bool {
	for _, e := range cmd {
		if e.Key != "lsid" {
			continue
		}
		lsid, _ := e.Value.(bson.D)
		for _, f := range lsid {
			if id, ok := f.Value.(bson.Binary); ok && f.Key == "id" {
				return match(id.Data)
			}
		}
	}
	return false
}
