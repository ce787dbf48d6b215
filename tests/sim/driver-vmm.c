/* The simulated driver's modules, virtual memory management and IPC
 * (driver.h). */
#include "driver.h"

/* ---- modules: code on the device, with no allocation call ---- */
struct CUmod_st {
	int dev;
	size_t bytes;
	int loaded;
};
struct CUfunc_st {
	struct CUmod_st *mod;
};

static void module_charge_locked(struct CUmod_st *m)
{
	if (!m->loaded) {
		m->loaded = 1;
		devs[m->dev].mod_bytes += m->bytes;
	}
}

CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
	NEED_CTX();
	unsigned long long bytes;
	if (!module || !image || sscanf(image, "SIMMODULE %llu", &bytes) != 1)
		return SIM_ERROR_INVALID_IMAGE;
	struct CUmod_st *m = calloc(1, sizeof *m);
	if (!m)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*m = (struct CUmod_st){tl_ctx->dev, (size_t)bytes, 0};
	const char *mode = getenv("CUDA_MODULE_LOADING");
	LOCK();
	if (mode && !strcmp(mode, "EAGER"))
		module_charge_locked(m);
	UNLOCK();
	*module = m;
	return CUDA_SUCCESS;
}

CUresult cuModuleUnload(CUmodule hmod)
{
	NEED_CTX();
	if (!hmod)
		return CUDA_ERROR_INVALID_HANDLE;
	LOCK();
	if (hmod->loaded)
		devs[hmod->dev].mod_bytes -= hmod->bytes;
	UNLOCK();
	free(hmod);
	return CUDA_SUCCESS;
}

/* Functions are never freed: like the driver's, they live as long as the
 * module, and the programs that use them never unload. */
CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
	NEED_CTX();
	if (!hfunc || !hmod || !name)
		return CUDA_ERROR_INVALID_VALUE;
	struct CUfunc_st *f = malloc(sizeof *f);
	if (!f)
		return CUDA_ERROR_OUT_OF_MEMORY;
	f->mod = hmod;
	*hfunc = f;
	return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
			unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
			unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
			void **kernelParams, void **extra)
{
	NEED_CTX();
	if (!f)
		return CUDA_ERROR_INVALID_HANDLE;
	LOCK();
	module_charge_locked(f->mod);
	UNLOCK();
	return CUDA_SUCCESS;
}

/* ---- virtual memory management ----
 * phys (capacity) <- handles (refs) <- mappings. Physical memory goes back
 * only when its last handle goes, and a handle only when it has been
 * released and unmapped everywhere. */
static void handle_put_locked(struct obj *h)
{
	if (h->refs > 0 || h->maps > 0)
		return;
	struct obj *phys = h->link;
	tab_del(&t_handle, h);
	free(h);
	if (--phys->refs == 0)
		obj_free_locked(&t_phys, phys);
}

static struct obj *handle_new_locked(struct obj *phys)
{
	struct obj *h = obj_new(next_handle++, OBJ_HANDLE, phys->dev, phys->size);
	if (!h)
		return NULL;
	h->refs = 1;
	h->link = phys;
	phys->refs++;
	tab_put(&t_handle, h);
	return h;
}

CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
				       CUmemAllocationGranularity_flags option)
{
	NEED_INIT();
	if (!granularity || !prop ||
	    (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
	     option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
		return CUDA_ERROR_INVALID_VALUE;
	*granularity = GRANULE;
	return CUDA_SUCCESS;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
		     const CUmemAllocationProp *prop, unsigned long long flags)
{
	NEED_CTX();
	if (!handle || !prop || flags || !size || size % GRANULE ||
	    prop->type != CU_MEM_ALLOCATION_TYPE_PINNED)
		return CUDA_ERROR_INVALID_VALUE;
	/* No NVLink fabric here: what a machine without IMEX answers. */
	if (prop->requestedHandleTypes & CU_MEM_HANDLE_TYPE_FABRIC)
		return CUDA_ERROR_NOT_SUPPORTED;
	int dev;
	switch (prop->location.type) {
	case CU_MEM_LOCATION_TYPE_DEVICE:
		if (!valid_dev(prop->location.id))
			return CUDA_ERROR_INVALID_DEVICE;
		dev = prop->location.id;
		break;
	case CU_MEM_LOCATION_TYPE_HOST:
	case CU_MEM_LOCATION_TYPE_HOST_NUMA:
	case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
		dev = -1; /* host memory: holds no device capacity */
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	CUresult r = CUDA_SUCCESS;
	LOCK();
	if (dev >= 0 && size > avail_locked(&devs[dev])) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
	} else {
		struct obj *phys = obj_new(next_phys++, OBJ_PHYS, dev, size);
		struct obj *h = phys ? handle_new_locked(phys) : NULL;
		if (!h) {
			free(phys);
			r = CUDA_ERROR_OUT_OF_MEMORY;
		} else {
			phys->aux = prop->requestedHandleTypes;
			tab_put(&t_phys, phys);
			if (dev >= 0) {
				phys->charged = size;
				devs[dev].used += size;
			}
			*handle = h->key;
		}
	}
	UNLOCK();
	return r;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
	NEED_CTX();
	CUresult r = CUDA_ERROR_INVALID_VALUE;
	LOCK();
	struct obj *h = tab_get(&t_handle, handle);
	if (h && h->refs > 0) {
		h->refs--;
		handle_put_locked(h);
		r = CUDA_SUCCESS;
	}
	UNLOCK();
	return r;
}

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
			     unsigned long long flags)
{
	NEED_CTX();
	if (!ptr || !size || size % GRANULE || flags || (alignment & (alignment - 1)))
		return CUDA_ERROR_INVALID_VALUE;
	size_t align = alignment > GRANULE ? alignment : GRANULE;
	/* Address space of our own, so no host pointer can ever equal it. */
	void *m = mmap((void *)(uintptr_t)addr, size + align, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	uintptr_t start = round_up((uintptr_t)m, align), end = start + size;
	if (start > (uintptr_t)m)
		munmap(m, start - (uintptr_t)m);
	if ((uintptr_t)m + size + align > end)
		munmap((void *)end, (uintptr_t)m + size + align - end);
	struct obj *o = obj_new(start, OBJ_RESERVE, -1, size);
	if (!o) {
		munmap((void *)start, size);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	o->va = start;
	o->va_len = size;
	LOCK();
	tab_put(&t_reserve, o);
	UNLOCK();
	*ptr = start;
	return CUDA_SUCCESS;
}

static int overlaps_mapping(const struct obj *o, const void *arg)
{
	const struct range *r = arg;
	return o->va < r->end && r->start < o->va + o->size;
}

static int contains_range(const struct obj *o, const void *arg)
{
	const struct range *r = arg;
	return o->va <= r->start && r->end <= o->va + o->size;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	NEED_CTX();
	CUresult r = CUDA_ERROR_INVALID_VALUE;
	struct range rg = {ptr, ptr + size};
	LOCK();
	struct obj *o = tab_get(&t_reserve, ptr);
	/* The whole reservation, and nothing may still be mapped in it. */
	if (o && o->size == size && !tab_find(&t_map, overlaps_mapping, &rg)) {
		host_unmap(o);
		tab_del(&t_reserve, o);
		free(o);
		r = CUDA_SUCCESS;
	}
	UNLOCK();
	return r;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
		  unsigned long long flags)
{
	NEED_CTX();
	if (flags || !size || size % GRANULE || offset % GRANULE)
		return CUDA_ERROR_INVALID_VALUE;
	struct range rg = {ptr, ptr + size};
	CUresult r = CUDA_ERROR_INVALID_VALUE;
	LOCK();
	struct obj *h = tab_get(&t_handle, handle);
	if (h && h->refs > 0 && offset <= h->size && size <= h->size - offset &&
	    tab_find(&t_reserve, contains_range, &rg) && !tab_find(&t_map, overlaps_mapping, &rg)) {
		struct obj *m = obj_new(ptr, OBJ_MAPPING, h->dev, size);
		if (m) {
			m->va = ptr;
			m->link = h;
			m->aux = offset;
			h->maps++;
			tab_put(&t_map, m);
			r = CUDA_SUCCESS;
		} else {
			r = CUDA_ERROR_OUT_OF_MEMORY;
		}
	}
	UNLOCK();
	return r;
}

struct unmap_scan {
	struct range r;
	int partial, whole;
};

static int inside_range(const struct obj *o, const void *arg)
{
	const struct range *r = arg;
	return r->start <= o->va && o->va + o->size <= r->end;
}

static int scan_unmap(const struct obj *o, const void *arg)
{
	struct unmap_scan *s = (struct unmap_scan *)arg;
	if (overlaps_mapping(o, &s->r)) {
		if (inside_range(o, &s->r))
			s->whole++;
		else
			s->partial++;
	}
	return 0;
}

/* The range must cover whole mappings; it may cover several. */
CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	NEED_CTX();
	struct unmap_scan s = {{ptr, ptr + size}, 0, 0};
	CUresult r = CUDA_ERROR_INVALID_VALUE;
	LOCK();
	tab_find(&t_map, scan_unmap, &s);
	if (size && s.whole && !s.partial) {
		struct obj *m;
		while ((m = tab_find(&t_map, inside_range, &s.r))) {
			struct obj *h = m->link;
			tab_del(&t_map, m);
			free(m);
			h->maps--;
			handle_put_locked(h);
		}
		r = CUDA_SUCCESS;
	}
	UNLOCK();
	return r;
}

static int maps_addr(const struct obj *o, const void *arg)
{
	uintptr_t a = *(const uintptr_t *)arg;
	return o->va <= a && a < o->va + o->size;
}

CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
	NEED_CTX();
	if (!handle)
		return CUDA_ERROR_INVALID_VALUE;
	uintptr_t a = (uintptr_t)addr;
	CUresult r = CUDA_ERROR_INVALID_VALUE;
	LOCK();
	struct obj *m = tab_find(&t_map, maps_addr, &a);
	if (m) {
		m->link->refs++;
		*handle = m->link->key; /* the same handle value, one more reference */
		r = CUDA_SUCCESS;
	}
	UNLOCK();
	return r;
}

struct cover_scan {
	struct range r;
	size_t covered;
};

static int scan_cover(const struct obj *o, const void *arg)
{
	struct cover_scan *s = (struct cover_scan *)arg;
	if (overlaps_mapping(o, &s->r)) {
		uintptr_t lo = o->va > s->r.start ? o->va : s->r.start;
		uintptr_t hi = o->va + o->size < s->r.end ? o->va + o->size : s->r.end;
		s->covered += hi - lo;
	}
	return 0;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
	NEED_CTX();
	if (!desc || !count || !size)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < count; i++)
		if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
		    !valid_dev(desc[i].location.id))
			return CUDA_ERROR_INVALID_VALUE;
	struct cover_scan s = {{ptr, ptr + size}, 0};
	LOCK();
	tab_find(&t_map, scan_cover, &s);
	UNLOCK();
	return s.covered == size ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* An exported handle is a memfd holding this record, so the fd can cross
 * a process boundary (fork, SCM_RIGHTS) and still describe the memory. */
struct share_record {
	uint32_t magic, pid;
	uint64_t phys_id, size;
	int32_t dev;
};

CUresult cuMemExportToShareableHandle(void *shareableHandle, CUmemGenericAllocationHandle handle,
				      CUmemAllocationHandleType handleType,
				      unsigned long long flags)
{
	NEED_CTX();
	if (!shareableHandle || flags)
		return CUDA_ERROR_INVALID_VALUE;
	if (handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
		return CUDA_ERROR_NOT_SUPPORTED;
	struct share_record rec = {SHARE_MAGIC, (uint32_t)getpid(), 0, 0, 0};
	CUresult r = CUDA_ERROR_INVALID_VALUE;
	LOCK();
	struct obj *h = tab_get(&t_handle, handle);
	if (h && h->refs > 0 && (h->link->aux & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)) {
		rec.phys_id = h->link->key;
		rec.size = h->link->size;
		rec.dev = h->link->dev;
		r = CUDA_SUCCESS;
	}
	UNLOCK();
	if (r != CUDA_SUCCESS)
		return r;
	int fd = memfd_create("simcuda-shareable", MFD_CLOEXEC);
	if (fd < 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (pwrite(fd, &rec, sizeof rec, 0) != (ssize_t)sizeof rec) {
		close(fd);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*(int *)shareableHandle = fd;
	return CUDA_SUCCESS;
}

/* Importing gives a new handle to the same physical memory. Memory another
 * process exported is described by the record and holds no capacity here. */
CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle, void *osHandle,
					CUmemAllocationHandleType shHandleType)
{
	NEED_CTX();
	if (!handle)
		return CUDA_ERROR_INVALID_VALUE;
	if (shHandleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
		return CUDA_ERROR_NOT_SUPPORTED;
	struct share_record rec;
	int fd = (int)(intptr_t)osHandle;
	if (pread(fd, &rec, sizeof rec, 0) != (ssize_t)sizeof rec || rec.magic != SHARE_MAGIC)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
	LOCK();
	struct obj *phys = rec.pid == (uint32_t)getpid() ? tab_get(&t_phys, rec.phys_id) : NULL;
	if (!phys) {
		phys = obj_new(next_phys++, OBJ_PHYS, rec.dev, rec.size);
		if (phys) {
			phys->aux = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
			tab_put(&t_phys, phys);
		}
	}
	struct obj *h = phys ? handle_new_locked(phys) : NULL;
	if (h) {
		*handle = h->key;
		r = CUDA_SUCCESS;
	}
	UNLOCK();
	return r;
}

/* ---- IPC ----
 * A handle names the exporter's allocation by pid and address. Opening maps
 * a fresh address range (no capacity: the memory is the exporter's); the
 * same handle opened twice in a process gives the same address, counted.
 * Unlike the real driver, a process may open its own handles, so one
 * program can exercise both sides. */
struct ipc_record {
	char magic[8];
	uint32_t pid;
	int32_t dev;
	uint64_t base, size;
};

static int contains_addr(const struct obj *o, const void *arg)
{
	uintptr_t a = *(const uintptr_t *)arg;
	return (o->kind == OBJ_DEVICE) && o->va <= a && a < o->va + o->size;
}

CUresult cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr)
{
	NEED_CTX();
	if (!pHandle)
		return CUDA_ERROR_INVALID_VALUE;
	uintptr_t a = dptr;
	struct ipc_record rec;
	CUresult r = CUDA_ERROR_INVALID_VALUE;
	LOCK();
	struct obj *o = tab_get(&t_mem, a);
	if (!o || o->kind != OBJ_DEVICE)
		o = tab_find(&t_mem, contains_addr, &a);
	if (o) {
		memset(&rec, 0, sizeof rec);
		memcpy(rec.magic, IPC_MAGIC, sizeof rec.magic);
		rec.pid = (uint32_t)getpid();
		rec.dev = o->dev;
		rec.base = o->va;
		rec.size = o->size;
		r = CUDA_SUCCESS;
	}
	UNLOCK();
	if (r == CUDA_SUCCESS) {
		memset(pHandle, 0, sizeof *pHandle);
		memcpy(pHandle->reserved, &rec, sizeof rec);
	}
	return r;
}

struct ipc_key {
	uint32_t pid;
	uint64_t base;
};

static int same_ipc(const struct obj *o, const void *arg)
{
	const struct ipc_key *k = arg;
	return o->pid == k->pid && o->aux == k->base;
}

CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
	NEED_CTX();
	struct ipc_record rec;
	memcpy(&rec, handle.reserved, sizeof rec);
	if (!pdptr || (Flags & ~CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) ||
	    memcmp(rec.magic, IPC_MAGIC, sizeof rec.magic) || !rec.size)
		return CUDA_ERROR_INVALID_VALUE;
	struct ipc_key k = {rec.pid, rec.base};
	LOCK();
	struct obj *o = tab_find(&t_ipc, same_ipc, &k);
	if (o) {
		o->refs++;
		UNLOCK();
		*pdptr = o->va;
		return CUDA_SUCCESS;
	}
	UNLOCK();
	size_t len = round_up(rec.size, GRANULE);
	void *m = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	o = obj_new((uintptr_t)m, OBJ_IPC, rec.dev, rec.size);
	if (!o) {
		munmap(m, len);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	o->va = (uintptr_t)m;
	o->va_len = len;
	o->refs = 1;
	o->pid = rec.pid;
	o->aux = rec.base;
	LOCK();
	tab_put(&t_ipc, o);
	UNLOCK();
	*pdptr = o->va;
	return CUDA_SUCCESS;
}

CUresult cuIpcCloseMemHandle(CUdeviceptr dptr)
{
	NEED_CTX();
	CUresult r = CUDA_ERROR_INVALID_VALUE;
	LOCK();
	struct obj *o = tab_get(&t_ipc, dptr);
	if (o) {
		if (--o->refs == 0)
			obj_free_locked(&t_ipc, o);
		r = CUDA_SUCCESS;
	}
	UNLOCK();
	return r;
}
