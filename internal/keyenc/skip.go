package keyenc

// SkipValue returns src after the one value encoded at its front,
// inverted when desc, without decoding it: finding where an index key's
// values end (the resident cache asks on every commit) allocates
// nothing for the types keys hold most. Where DecodeValue succeeds,
// SkipValue returns the same rest; it does not check that a number's
// digits are canonical, which DecodeValue does.
func SkipValue(src []byte, desc bool) ([]byte, error) {
	var inv byte
	if desc {
		inv = 0xFF
	}
	if len(src) == 0 {
		return nil, (&decoder{src: src}).errorf("truncated")
	}
	switch tag := src[0] ^ inv; tag {
	case tagMinKey, tagUndefined, tagNull, tagNaN, tagNegInf, tagZero, tagPosInf, tagFalse, tagTrue, tagMaxKey:
		return src[1:], nil
	case tagNeg, tagPos:
		return skipNumber(src, inv)
	case tagString, tagCode, tagCodeScope:
		return skipString(src, 1, inv)
	case tagObjectID:
		return skipFixed(src, 1+12)
	case tagDate, tagTimestamp:
		return skipFixed(src, 1+8)
	}
	// Containers and the rarer types: the decoder's walk.
	if desc {
		_, rest, err := DecodeValueDesc(src)
		return rest, err
	}
	_, rest, err := DecodeValue(src)
	return rest, err
}

func skipFixed(src []byte, n int) ([]byte, error) {
	if len(src) < n {
		return nil, (&decoder{src: src, pos: len(src)}).errorf("truncated")
	}
	return src[n:], nil
}

// skipString skips the escaped string starting at src[at] and its 0x00
// 0x01 terminator, checking its escapes as decoder.str does.
func skipString(src []byte, at int, inv byte) ([]byte, error) {
	for i := at; i < len(src); i++ {
		if src[i]^inv != 0x00 {
			continue
		}
		if i+1 >= len(src) {
			break
		}
		switch src[i+1] ^ inv {
		case 0x01:
			return src[i+2:], nil
		case 0xFF:
			i++
		default:
			return nil, (&decoder{src: src, pos: i + 2}).errorf("bad string escape 0x%02x", src[i+1]^inv)
		}
	}
	return nil, (&decoder{src: src, pos: len(src)}).errorf("truncated")
}

// skipNumber skips a tag, the two exponent bytes, the 7-bit groups (the
// low bit of each says another follows) and, after maxGroups groups that
// all continue, the 16 bytes of the exact decimal (decoder.mag's layout).
// A negative number's bytes are inverted again, which leaves the low bit
// test the same up to that inversion.
func skipNumber(src []byte, inv byte) ([]byte, error) {
	if src[0]^inv == tagNeg {
		inv ^= 0xFF
	}
	i := 3
	for g := 0; g < maxGroups; g++ {
		if i >= len(src) {
			return nil, (&decoder{src: src, pos: len(src)}).errorf("truncated")
		}
		b := src[i] ^ inv
		i++
		if b&1 == 0 {
			return src[i:], nil
		}
	}
	return skipFixed(src, i+16)
}
