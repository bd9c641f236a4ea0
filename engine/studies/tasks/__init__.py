"""The four collaborative tasks of Sociodrama Sec. 5.1 and the persona-recasting controller."""
