/* The routes by which programs find driver functions at run time: dlsym,
 * dlvsym, cuGetProcAddress and cudaGetDriverEntryPoint. Each calls the real
 * lookup, then swaps in our wrapper for exactly the variant it returned. */
#include <dlfcn.h>

#include "preload/hooks/forward.h"

/* cu[A-Z]... and cuda[A-Z]...: not cudnn*, cublas*, curl_*. */
static int is_cuda_name(const char *s)
{
	if (!s || s[0] != 'c' || s[1] != 'u')
		return 0;
	if (s[2] >= 'A' && s[2] <= 'Z')
		return 1;
	return s[2] == 'd' && s[3] == 'a' && s[4] >= 'A' && s[4] <= 'Z';
}

GMT_EXPORT void *dlsym(void *handle, const char *symbol)
{
	void *(*real)(void *, const char *) = gmt_real_dlsym();
	if (!real)
		return NULL;
	/* RTLD_NEXT is relative to the caller, which libc finds from its return
	 * address: this must stay a tail call so that address is the caller's. */
	if (handle == RTLD_NEXT || !is_cuda_name(symbol))
		return real(handle, symbol);
	return gmt_tracing() ? gmt_wrap_dlsym(symbol, handle, real(handle, symbol))
			     : real(handle, symbol);
}

GMT_EXPORT void *dlvsym(void *handle, const char *symbol, const char *version)
{
	void *(*real)(void *, const char *, const char *) = gmt_real_dlvsym();
	if (!real)
		return NULL;
	if (handle == RTLD_NEXT || !is_cuda_name(symbol))
		return real(handle, symbol, version);
	return gmt_tracing() ? gmt_wrap_dlsym(symbol, handle, real(handle, symbol, version))
			     : real(handle, symbol, version);
}

/* cuGetProcAddress is asked for base names ("cuMemAlloc" at 3020 ->
 * cuMemAlloc_v2): the address it returns says which variant it chose. The
 * runtime looks up "cuGetProcAddress" itself this way, gets our wrapper of
 * the right arity back, and so routes its ~440 later lookups through us. */
CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
			     CUdriverProcAddressQueryResult *symbolStatus)
{
	pfn_cuGetProcAddress_v2 real = GMT_REAL(cuGetProcAddress_v2);
	if (!real)
		return CUDA_ERROR_NOT_FOUND;
	CUresult r = real(symbol, pfn, cudaVersion, flags, symbolStatus);
	if (r == CUDA_SUCCESS && pfn && gmt_tracing())
		*pfn = gmt_wrap_entry_point(symbol, *pfn);
	return r;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
	pfn_cuGetProcAddress real = GMT_REAL(cuGetProcAddress);
	if (!real)
		return CUDA_ERROR_NOT_FOUND;
	CUresult r = real(symbol, pfn, cudaVersion, flags);
	if (r == CUDA_SUCCESS && pfn && gmt_tracing())
		*pfn = gmt_wrap_entry_point(symbol, *pfn);
	return r;
}

/* How PyTorch's expandable segments and NCCL reach cuMemCreate/cuMemMap. */
#define ENTRY_POINT(name)                                                                          \
	cudaError_t name(const char *symbol, void **funcPtr, unsigned long long flags,             \
			 enum cudaDriverEntryPointQueryResult *driverStatus)                       \
	{                                                                                          \
		pfn_##name real = GMT_REAL(name);                                                  \
		if (!real)                                                                         \
			return GMT_RUNTIME_MISSING;                                                \
		cudaError_t r = real(symbol, funcPtr, flags, driverStatus);                        \
		if (r == cudaSuccess && funcPtr && gmt_tracing())                                  \
			*funcPtr = gmt_wrap_entry_point(symbol, *funcPtr);                         \
		return r;                                                                          \
	}
ENTRY_POINT(cudaGetDriverEntryPoint)
ENTRY_POINT(cudaGetDriverEntryPoint_ptsz)

#define ENTRY_POINT_BY_VERSION(name)                                                               \
	cudaError_t name(const char *symbol, void **funcPtr, unsigned int cudaVersion,             \
			 unsigned long long flags,                                                 \
			 enum cudaDriverEntryPointQueryResult *driverStatus)                       \
	{                                                                                          \
		pfn_##name real = GMT_REAL(name);                                                  \
		if (!real)                                                                         \
			return GMT_RUNTIME_MISSING;                                                \
		cudaError_t r = real(symbol, funcPtr, cudaVersion, flags, driverStatus);           \
		if (r == cudaSuccess && funcPtr && gmt_tracing())                                  \
			*funcPtr = gmt_wrap_entry_point(symbol, *funcPtr);                         \
		return r;                                                                          \
	}
ENTRY_POINT_BY_VERSION(cudaGetDriverEntryPointByVersion)
ENTRY_POINT_BY_VERSION(cudaGetDriverEntryPointByVersion_ptsz)
