/* The one export of bcryptprimitives.dll that Wine 8 lacks: ProcessPrng, which the Rust standard
   library (pydantic-core, jsonschema-rs, cryptography) and claude.exe import for random bytes.
   It fills the buffer from RtlGenRandom (advapi32's SystemFunction036), which Wine has. Built by
   scripts/test-windows into the Wine prefix's system32; never shipped. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG part = length > 0x10000000 ? 0x10000000 : (ULONG)length;
        if (!SystemFunction036(data, part)) return FALSE;
        data += part;
        length -= part;
    }
    return TRUE;
}
