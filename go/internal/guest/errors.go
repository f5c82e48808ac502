package guest

// readError lifts the `error` at ptr (case at +0, payload at +8), copying its text.
func (i *Instance) readError(name string, ptr uint32) (*Refusal, error) {
	b, err := i.view(name, ptr, 16)
	if err != nil {
		return nil, err
	}
	r := &Refusal{Case: ErrorCase(b[0])}
	switch r.Case {
	case InvalidParams, MalformedNumbers, MalformedPlogPage, StorageFailed:
		s, err := i.view(name, le32(b[8:]), le32(b[12:]))
		if err != nil {
			return nil, err
		}
		r.Text = string(s)
	case UnknownWSKind:
		r.Kind = le16(b[8:])
	case UnknownSeqID, SequenceExhausted:
		r.Kind, r.Seq = le16(b[8:]), le16(b[10:])
	case UnknownOperation, WrongOutcome:
		r.Op = le64(b[8:])
	}
	return r, nil
}

// refused answers an `instance` call that was refused with refusal: the full error through
// `last-error` (which the refused call set).
func (i *Instance) refused(refusal byte) error {
	if err := i.call("last-error", i.f.lastError); err != nil {
		return err
	}
	ptr := uint32(i.stack[0])
	b, err := i.view("last-error", ptr, 24)
	if err != nil {
		return err
	}
	r := &Refusal{Case: ErrorCase(refusal)}
	if b[0] == 1 {
		if r, err = i.readError("last-error", ptr+8); err != nil {
			return err
		}
	}
	if err := i.post("last-error", i.f.lastErrorPost, ptr); err != nil {
		return err
	}
	return r
}

// methodResult reads a `result<T, error>` at ptr: nil if ok, else the error (after which the
// caller still makes the post-return call).
func (i *Instance) methodResult(name string, ptr uint32) (ok bool, refusal *Refusal, err error) {
	b, err := i.view(name, ptr, 24)
	if err != nil {
		return false, nil, err
	}
	if b[0] == 0 {
		return true, nil, nil
	}
	r, err := i.readError(name, ptr+8)
	return false, r, err
}
