/* The simulated driver's memory calls: linear device memory, host memory,
 * stream-ordered pools and arrays (driver.h). */
#include "driver.h"

/* ---- linear device memory ---- */
/* Capacity an allocation holds: whole 2 MiB pages above 1 MiB (how
 * nvidia-smi counts), 512-byte units below. Its alignment is the same. */
static size_t granule_of(size_t size)
{
	return size > MiB ? GRANULE : SMALL_ALIGN;
}

static CUresult dev_alloc_locked(int dev, size_t size, enum obj_kind kind, uintptr_t *out)
{
	size_t g = granule_of(size), charge = round_up(size, g);
	struct device *dv = &devs[dev];
	struct arena *a = kind == OBJ_LEGACY ? &legacy : &dv->arena;
	if (charge < size || charge > avail_locked(dv) || (kind == OBJ_LEGACY && !legacy_ok))
		return CUDA_ERROR_OUT_OF_MEMORY;
	uintptr_t va = arena_take(a, charge, g);
	if (!va)
		return CUDA_ERROR_OUT_OF_MEMORY;
	struct obj *o = obj_new(va, kind, dev, size);
	if (!o) {
		arena_give(a, va, charge);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	o->charged = charge;
	o->va = va;
	o->va_len = charge;
	tab_put(&t_mem, o);
	dv->used += charge;
	*out = va;
	return CUDA_SUCCESS;
}

static CUresult dev_alloc(int dev, size_t size, enum obj_kind kind, CUdeviceptr *dptr)
{
	if (!dptr || size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	uintptr_t va;
	LOCK();
	CUresult r = dev_alloc_locked(dev, size, kind, &va);
	UNLOCK();
	if (r == CUDA_SUCCESS)
		*dptr = va; /* on failure *dptr stays untouched */
	return r;
}

/* Gives the pool's reserve above `keep` back to the device. */
static void pool_trim_locked(struct CUmemPoolHandle_st *p, size_t keep)
{
	if (p->idle > keep) {
		devs[p->dev].used -= p->idle - keep;
		p->idle = keep;
	}
}

/* An allocation of the pool freed: its bytes stay reserved (still charged
 * to the device) up to the threshold. Called before the object's own
 * charge goes back. */
static void pool_keep_locked(struct CUmemPoolHandle_st *p, size_t charged)
{
	if (!p)
		return;
	p->live -= charged;
	p->idle += charged;
	devs[p->dev].used += charged;
	pool_trim_locked(p, p->threshold > SIZE_MAX ? SIZE_MAX : (size_t)p->threshold);
}

void host_unmap(struct obj *o)
{
	munmap((void *)o->va, o->va_len);
}

void obj_free_locked(struct table *t, struct obj *o)
{
	switch (o->kind) {
	case OBJ_ASYNC:
		pool_keep_locked((struct CUmemPoolHandle_st *)(uintptr_t)o->aux, o->charged);
		/* fall through */
	case OBJ_DEVICE:
		arena_give(&devs[o->dev].arena, o->va, o->va_len);
		devs[o->dev].used -= o->charged;
		break;
	case OBJ_LEGACY:
		arena_give(&legacy, o->va, o->va_len);
		devs[o->dev].used -= o->charged;
		break;
	case OBJ_MANAGED:
	case OBJ_PINNED:
	case OBJ_IPC:
		host_unmap(o);
		break;
	default:
		if (o->dev >= 0)
			devs[o->dev].used -= o->charged;
		break;
	}
	tab_del(t, o);
	free(o);
}

/* Frees address `p` if it is one of the kinds in `mask` (1 << kind). */
static CUresult free_addr(uint64_t p, unsigned mask)
{
	CUresult r = CUDA_ERROR_INVALID_VALUE;
	LOCK();
	struct obj *o = tab_get(&t_mem, p);
	if (o && (mask >> o->kind & 1)) {
		obj_free_locked(&t_mem, o);
		r = CUDA_SUCCESS;
	}
	UNLOCK();
	return r;
}

#define DEVICE_KINDS (1u << OBJ_DEVICE | 1u << OBJ_ASYNC)

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	NEED_CTX();
	if (nobooks_on())
		return nobooks_alloc(dptr, bytesize);
	return dev_alloc(tl_ctx->dev, bytesize, OBJ_DEVICE, dptr);
}

static CUresult pitch_of(size_t width, size_t height, unsigned elem, size_t *pitch, size_t *bytes)
{
	if (!width || !height || (elem != 4 && elem != 8 && elem != 16))
		return CUDA_ERROR_INVALID_VALUE;
	*pitch = round_up(width, PITCH_ALIGN);
	*bytes = *pitch * height;
	if (*bytes / height != *pitch)
		return CUDA_ERROR_OUT_OF_MEMORY;
	return CUDA_SUCCESS;
}

CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
			    unsigned int ElementSizeBytes)
{
	NEED_CTX();
	size_t pitch, bytes;
	if (!dptr || !pPitch)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = pitch_of(WidthInBytes, Height, ElementSizeBytes, &pitch, &bytes);
	if (r == CUDA_SUCCESS)
		r = dev_alloc(tl_ctx->dev, bytes, OBJ_DEVICE, dptr);
	if (r == CUDA_SUCCESS)
		*pPitch = pitch;
	return r;
}

CUresult cuMemFree_v2(CUdeviceptr dptr)
{
	NEED_CTX();
	if (!dptr)
		return CUDA_SUCCESS; /* freeing NULL is a no-op */
	if (nobooks_owns(dptr))
		return CUDA_SUCCESS;
	return free_addr(dptr, DEVICE_KINDS | 1u << OBJ_MANAGED);
}

/* The unversioned exports are the CUDA 3.1 ABI: 32-bit pointers and sizes.
 * They allocate from a reservation below 4 GiB so the pointer fits. */
CUresult cuMemAlloc(unsigned int *dptr, unsigned int bytesize)
{
	NEED_CTX();
	if (!dptr || !bytesize)
		return CUDA_ERROR_INVALID_VALUE;
	uintptr_t va;
	LOCK();
	CUresult r = dev_alloc_locked(tl_ctx->dev, bytesize, OBJ_LEGACY, &va);
	UNLOCK();
	if (r == CUDA_SUCCESS)
		*dptr = (unsigned int)va;
	return r;
}

CUresult cuMemAllocPitch(unsigned int *dptr, unsigned int *pPitch, unsigned int WidthInBytes,
			 unsigned int Height, unsigned int ElementSizeBytes)
{
	NEED_CTX();
	size_t pitch, bytes;
	if (!dptr || !pPitch)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = pitch_of(WidthInBytes, Height, ElementSizeBytes, &pitch, &bytes);
	if (r == CUDA_SUCCESS && bytes > 0xffffffffu)
		r = CUDA_ERROR_OUT_OF_MEMORY;
	if (r == CUDA_SUCCESS)
		r = cuMemAlloc(dptr, (unsigned int)bytes);
	if (r == CUDA_SUCCESS)
		*pPitch = (unsigned int)pitch;
	return r;
}

CUresult cuMemFree(unsigned int dptr)
{
	NEED_CTX();
	if (!dptr)
		return CUDA_SUCCESS;
	return free_addr(dptr, 1u << OBJ_LEGACY);
}

/* ---- host memory: real pages ---- */
static CUresult host_alloc(size_t size, enum obj_kind kind, unsigned flags, void **out)
{
	size_t len = round_up(size, (size_t)sysconf(_SC_PAGESIZE));
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	struct obj *o = obj_new((uintptr_t)p, kind, -1, size);
	if (!o) {
		munmap(p, len);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	o->va = (uintptr_t)p;
	o->va_len = len;
	o->aux = flags;
	LOCK();
	tab_put(&t_mem, o);
	UNLOCK();
	*out = p;
	return CUDA_SUCCESS;
}

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
	NEED_CTX();
	if (!dptr || !bytesize || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST))
		return CUDA_ERROR_INVALID_VALUE;
	void *p;
	CUresult r = host_alloc(bytesize, OBJ_MANAGED, flags, &p);
	if (r == CUDA_SUCCESS)
		*dptr = (uintptr_t)p;
	return r;
}

CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
	NEED_CTX();
	unsigned known =
	    CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
	if (!pp || !bytesize || (Flags & ~known))
		return CUDA_ERROR_INVALID_VALUE;
	return host_alloc(bytesize, OBJ_PINNED, Flags, pp);
}

CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
	return cuMemHostAlloc(pp, bytesize, 0);
}

CUresult cuMemAllocHost(void **pp, unsigned int bytesize)
{
	return cuMemHostAlloc(pp, bytesize, 0);
}

CUresult cuMemFreeHost(void *p)
{
	NEED_CTX();
	return free_addr((uintptr_t)p, 1u << OBJ_PINNED);
}

static int overlaps_pinned(const struct obj *o, const void *arg)
{
	const struct range *r = arg;
	return (o->kind == OBJ_PINNED || o->kind == OBJ_REGISTERED) && o->va < r->end &&
	       r->start < o->va + o->size;
}

CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
	NEED_CTX();
	unsigned known = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
			 CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;
	if (!p || !bytesize || (Flags & ~known))
		return CUDA_ERROR_INVALID_VALUE;
	struct range r = {(uintptr_t)p, (uintptr_t)p + bytesize};
	CUresult res = CUDA_SUCCESS;
	LOCK();
	if (tab_find(&t_reg, overlaps_pinned, &r) || tab_find(&t_mem, overlaps_pinned, &r)) {
		res = SIM_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
	} else {
		struct obj *o = obj_new(r.start, OBJ_REGISTERED, -1, bytesize);
		if (o) {
			o->va = r.start;
			o->aux = Flags;
			tab_put(&t_reg, o);
		} else {
			res = CUDA_ERROR_OUT_OF_MEMORY;
		}
	}
	UNLOCK();
	return res;
}

/* CUDA 4.0's form; 6.5 (_v2) changed only what the flags may be. */
CUresult cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags)
{
	return cuMemHostRegister_v2(p, bytesize, Flags);
}

CUresult cuMemHostUnregister(void *p)
{
	NEED_CTX();
	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = SIM_ERROR_HOST_MEMORY_NOT_REGISTERED;
	LOCK();
	struct obj *o = tab_get(&t_reg, (uintptr_t)p);
	if (o) {
		obj_free_locked(&t_reg, o);
		r = CUDA_SUCCESS;
	}
	UNLOCK();
	return r;
}

/* ---- stream-ordered allocation and pools ----
 * The simulation completes stream work at once: memory is allocated and
 * freed when the call is made. Streams are not checked. */
/* The pool's reserve serves first; what it lacks comes from the device,
 * the rest of the reserve going back if the device is short. */
static CUresult pool_alloc(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool)
{
	NEED_CTX();
	if (!dptr || bytesize == 0)
		return CUDA_ERROR_INVALID_VALUE;
	LOCK();
	struct CUmemPoolHandle_st *p = pool ? pool : &devs[tl_ctx->dev].default_pool;
	if (!tab_get(&t_pool, (uintptr_t)p)) {
		UNLOCK();
		return CUDA_ERROR_INVALID_VALUE;
	}
	size_t charge = round_up(bytesize, granule_of(bytesize));
	if (p->idle >= charge) {
		p->idle -= charge;
		devs[p->dev].used -= charge;
	} else if (charge > avail_locked(&devs[p->dev])) {
		pool_trim_locked(p, 0);
	}
	uintptr_t va;
	CUresult r = dev_alloc_locked(p->dev, bytesize, OBJ_ASYNC, &va);
	if (r == CUDA_SUCCESS) {
		struct obj *o = tab_get(&t_mem, va);
		o->aux = (uintptr_t)p;
		p->live += o->charged;
		if (p->live > p->used_high)
			p->used_high = p->live;
		if (p->live + p->idle > p->reserved_high)
			p->reserved_high = p->live + p->idle;
		*dptr = va;
	}
	UNLOCK();
	return r;
}

CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	return pool_alloc(dptr, bytesize, NULL);
}

CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	return pool_alloc(dptr, bytesize, NULL);
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
				 CUstream hStream)
{
	return pool ? pool_alloc(dptr, bytesize, pool) : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
				      CUstream hStream)
{
	return pool ? pool_alloc(dptr, bytesize, pool) : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
	NEED_CTX();
	return free_addr(dptr, DEVICE_KINDS);
}

CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
	NEED_CTX();
	return free_addr(dptr, DEVICE_KINDS);
}

CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
	NEED_CTX();
	if (!pool || !poolProps || poolProps->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    poolProps->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
	    !valid_dev(poolProps->location.id))
		return CUDA_ERROR_INVALID_VALUE;
	struct CUmemPoolHandle_st *p = malloc(sizeof *p);
	struct obj *o = p ? obj_new((uintptr_t)p, OBJ_POOL, poolProps->location.id, 0) : NULL;
	if (!o) {
		free(p);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*p = (struct CUmemPoolHandle_st){.dev = poolProps->location.id};
	LOCK();
	tab_put(&t_pool, o);
	UNLOCK();
	*pool = p;
	return CUDA_SUCCESS;
}

/* Outstanding allocations outlive their pool, as the driver allows. */
CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
	NEED_CTX();
	CUresult r = CUDA_ERROR_INVALID_VALUE;
	LOCK();
	struct obj *o = tab_get(&t_pool, (uintptr_t)pool);
	if (o && !pool->is_default) {
		pool_trim_locked(pool, 0);
		for (size_t i = 0; i < t_mem.n; i++)
			for (struct obj *m = t_mem.b[i]; m; m = m->next)
				if (m->kind == OBJ_ASYNC && m->aux == (uintptr_t)pool)
					m->aux = 0;
		tab_del(&t_pool, o);
		free(o);
		free(pool);
		r = CUDA_SUCCESS;
	}
	UNLOCK();
	return r;
}

CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
	NEED_CTX();
	LOCK();
	struct obj *o = tab_get(&t_pool, (uintptr_t)pool);
	if (o)
		pool_trim_locked(pool, minBytesToKeep);
	UNLOCK();
	return o ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
	NEED_INIT();
	if (!pool_out)
		return CUDA_ERROR_INVALID_VALUE;
	if (!valid_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	*pool_out = &devs[dev].default_pool;
	return CUDA_SUCCESS;
}

/* The reuse attributes are ints and change nothing here; the others are
 * cuuint64_t. Setting a high-water mark resets it. */
static CUresult pool_attr(CUmemoryPool pool, CUmemPool_attribute attr, void *value, int set)
{
	if (!value)
		return CUDA_ERROR_INVALID_VALUE;
	LOCK();
	CUresult r = tab_get(&t_pool, (uintptr_t)pool) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	cuuint64_t *v = value;
	if (r == CUDA_SUCCESS && set) {
		if (attr == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) {
			pool->threshold = *v;
			pool_trim_locked(pool, *v > SIZE_MAX ? SIZE_MAX : (size_t)*v);
		} else if (attr == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH) {
			pool->reserved_high = pool->live + pool->idle;
		} else if (attr == CU_MEMPOOL_ATTR_USED_MEM_HIGH) {
			pool->used_high = pool->live;
		} else if (attr > CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES) {
			r = CUDA_ERROR_INVALID_VALUE;
		}
	} else if (r == CUDA_SUCCESS) {
		switch (attr) {
		case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
			*v = pool->threshold;
			break;
		case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
			*v = pool->live + pool->idle;
			break;
		case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
			*v = pool->reserved_high;
			break;
		case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
			*v = pool->live;
			break;
		case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
			*v = pool->used_high;
			break;
		default:
			*(int *)value = 1;
			break;
		}
	}
	UNLOCK();
	return r;
}

CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
	NEED_CTX();
	return pool_attr(pool, attr, value, 1);
}

CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
	NEED_CTX();
	return pool_attr(pool, attr, value, 0);
}

/* ---- arrays ---- */
static size_t format_bytes(CUarray_format f)
{
	switch (f) {
	case CU_AD_FORMAT_UNSIGNED_INT8:
	case CU_AD_FORMAT_SIGNED_INT8:
		return 1;
	case CU_AD_FORMAT_UNSIGNED_INT16:
	case CU_AD_FORMAT_SIGNED_INT16:
	case CU_AD_FORMAT_HALF:
		return 2;
	case CU_AD_FORMAT_UNSIGNED_INT32:
	case CU_AD_FORMAT_SIGNED_INT32:
	case CU_AD_FORMAT_FLOAT:
		return 4;
	default:
		return 0;
	}
}

static CUresult array_create(CUarray *pHandle, size_t w, size_t h, size_t d, CUarray_format f,
			     unsigned channels)
{
	NEED_CTX();
	size_t elem = format_bytes(f);
	if (!pHandle || !w || !elem || (channels != 1 && channels != 2 && channels != 4))
		return CUDA_ERROR_INVALID_VALUE;
	size_t bytes = w * (h ? h : 1) * (d ? d : 1) * elem * channels;
	size_t charge = round_up(bytes, granule_of(bytes));
	int dev = tl_ctx->dev;
	struct CUarray_st *a = malloc(sizeof *a);
	if (!a)
		return CUDA_ERROR_OUT_OF_MEMORY;
	a->dev = dev;
	CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
	LOCK();
	if (charge <= avail_locked(&devs[dev])) {
		struct obj *o = obj_new((uintptr_t)a, OBJ_ARRAY, dev, bytes);
		if (o) {
			o->charged = charge;
			devs[dev].used += charge;
			tab_put(&t_array, o);
			r = CUDA_SUCCESS;
		}
	}
	UNLOCK();
	if (r == CUDA_SUCCESS)
		*pHandle = a;
	else
		free(a);
	return r;
}

CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray)
{
	if (!pAllocateArray)
		return is_initialized() ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_INITIALIZED;
	const CUDA_ARRAY_DESCRIPTOR *d = pAllocateArray;
	return array_create(pHandle, d->Width, d->Height, 0, d->Format, d->NumChannels);
}

CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray)
{
	if (!pAllocateArray)
		return is_initialized() ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_INITIALIZED;
	const CUDA_ARRAY3D_DESCRIPTOR *d = pAllocateArray;
	return array_create(pHandle, d->Width, d->Height, d->Depth, d->Format, d->NumChannels);
}

CUresult cuArrayDestroy(CUarray hArray)
{
	NEED_CTX();
	CUresult r = CUDA_ERROR_INVALID_VALUE;
	LOCK();
	struct obj *o = tab_get(&t_array, (uintptr_t)hArray);
	if (o) {
		obj_free_locked(&t_array, o);
		free(hArray);
		r = CUDA_SUCCESS;
	}
	UNLOCK();
	return r;
}
