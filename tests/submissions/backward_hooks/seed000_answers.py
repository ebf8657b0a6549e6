# %% backward_collect
# x1.grad, x2.grad, output.grad 순서로 list에 넣는다.
answer = []

def module_hook(module, grad_input, grad_output):
    answer.extend(grad_input)
    answer.extend(grad_output)

# 내가 정의한 hook을 실제로 모듈에 적용시키는 과정
model.register_full_backward_hook(module_hook)

# %% tensor_hook_W
# Model의 Parameter W의 gradient 값을 저장하기 위한 list
answer = []

def tensor_hook(grad):
    answer.extend(grad)

# 내가 정의한 hook을 실제로 모듈 내의 tensor(여기서는 weight)에 적용
model.W.register_hook(tensor_hook)
