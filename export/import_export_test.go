package export

// DecodeStatCacheForTest exposes the stat cache decoder to the fuzzer.
func DecodeStatCacheForTest(data []byte) error {
	_, err := decodeStatCache(data, false)
	return err
}
