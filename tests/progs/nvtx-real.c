/* NVIDIA's own header-only NVTX v3 loader against our injection: built by
 * tests/integration/t-nvtx-real.sh when the CUDA toolkit's nvtx3 headers
 * are installed, as a shared library (annotate(), whose weak static
 * injection pointer the preloaded library may bind) and a program that
 * calls it between two cudaMalloc calls on the simulated runtime. */
#include <stddef.h>
#include <stdio.h>

#ifdef NVTX_REAL_MAIN
int cudaMalloc(void **p, size_t n);
int cudaFree(void *p);
void annotate(void);

int main(void)
{
	void *p, *q;
	int rc = cudaMalloc(&p, 1 << 20);
	annotate();
	rc |= cudaMalloc(&q, 1 << 20) | cudaFree(p) | cudaFree(q);
	printf("cuda calls %s\n", rc ? "failed" : "ok");
	return rc != 0;
}
#else
#include <nvtx3/nvToolsExt.h>

__attribute__((visibility("default"))) void annotate(void)
{
	nvtxRangePushA("real push");
	nvtxMarkW(L"real wide mark");
	nvtxRangeId_t id = nvtxRangeStartA("real start");
	nvtxRangeEnd(id);
	nvtxDomainHandle_t dom = nvtxDomainCreateA("realdomain");
	nvtxEventAttributes_t a = {0};
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
	a.message.registered = nvtxDomainRegisterStringA(dom, "real registered");
	nvtxDomainRangePushEx(dom, &a);
	nvtxDomainRangePop(dom);
	nvtxDomainDestroy(dom);
	printf("push level of the pop: %d\n", nvtxRangePop());
}
#endif
